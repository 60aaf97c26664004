#!/usr/bin/env python3
"""The test of run_readme_commands.py: a README that names a missing config, a checkpoint
the earlier commands do not write, or an option the program does not have fails it, with
the command and the reason named; the same README with the right checkpoint passes; a
GPU-only command is listed as skipped where no GPU is visible."""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

TRAIN = ("build/cpu/src/cli/hetrec train --config configs/demo.toml --set train.steps=3 "
         "--set train.eval_at_end=false --set train.progress=off --set train.threads=2")
EVAL = ("build/cpu/src/cli/hetrec eval --config configs/demo.toml --set train.eval_samples=2048 "
        "--checkpoint out/demo/checkpoints/ckpt-%012d.hck")

CASES = [
    # (name, README commands, expected exit, texts the output must hold)
    ("right checkpoint", [TRAIN, EVAL % 3, "build/cuda/src/cli/hetrec hw probe   # on a GPU"], 0, ["ok"]),
    ("missing config", ["build/cpu/src/cli/hetrec data synth --config configs/no_such_config.toml --samples 10 "
                        "--output s.hbin"], 1, ["names 'configs/no_such_config.toml', which the repository does not "
                                                "have", "FAILED"]),
    ("wrong checkpoint", [TRAIN, EVAL % 4], 1, ["ckpt-000000000004.hck", "exit 4", "FAILED"]),
    ("unknown option", ["build/cpu/src/cli/hetrec hw list --no-such-option"], 1,
     ["`hetrec hw list` has no option --no-such-option"]),
    ("missing config of a GPU command", ["build/cuda/src/cli/hetrec train --config configs/gone.toml"], 1,
     ["names 'configs/gone.toml'"]),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    args = p.parse_args()
    gpu = subprocess.run(["sh", "-c", "nvidia-smi -L"], capture_output=True).returncode == 0
    failed = False
    with tempfile.TemporaryDirectory(prefix="hetrec_readme_test_") as work:
        for name, commands, expected, texts in CASES:
            readme = os.path.join(work, name.replace(" ", "_") + ".md")
            with open(readme, "w") as f:
                f.write("# fixture\n\n```sh\n" + "\n".join(commands) + "\n```\n")
            r = subprocess.run([sys.executable, os.path.join(HERE, "run_readme_commands.py"), "--source", args.source,
                                "--build", args.build, "--readme", readme, "--allow-unused-rules"],
                               capture_output=True, text=True, timeout=240)
            out = r.stdout + r.stderr
            wanted = list(texts)
            if name == "right checkpoint" and not gpu:
                wanted.append("skipped")
            missing = [t for t in wanted if t not in out]
            good = r.returncode == expected and not missing
            print("%-32s exit %d (expected %d)%s" % (name, r.returncode, expected,
                                                     "" if good else ": FAILED, missing %r" % missing))
            if not good:
                print("    " + out.replace("\n", "\n    "))
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
