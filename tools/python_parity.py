#!/usr/bin/env python3
"""The Python module against the program on one device: both train the demo with the same
config and seed (shrunk to 32 steps of 512 samples, or with --full the demo as shipped:
its 1954 steps of 2048 samples and the evaluation of 100,000 samples), and the results
record says whether they reached the same AUC and losses.

    PYTHONPATH=build/cpu/src/python python3 tools/python_parity.py --full \\
        --program build/cpu/src/cli/hetrec --device cpu --out bench/results/cpu/python-parity-<date>-demo.json

Exit status 0 when the final AUC agrees within --tolerance (relative; 0: exactly), else 1.
"""
import argparse
import json
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time

import hetrec

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEMO = ROOT / "configs" / "demo.toml"


def overrides(out, device, full):
    shrink = [] if full else ["data.synthetic.train_samples=16384", "data.synthetic.eval_samples=4096",
                              "train.batch_size=512", "train.eval_every=0", "train.log_every=8"]
    return shrink + ["train.progress=off", "train.log_level=warn", f"train.device={device}",
                     f'train.metrics_path="{out}/metrics.jsonl"', f'train.checkpoint_dir="{out}/checkpoints"']


def commit(program):
    """The commit the program was built from (`hetrec --version`)."""
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("commit:")), "unknown")


def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, check=True).stdout.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def records(path, kind):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r.get("type") == kind]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", required=True, help="the hetrec program built with the module")
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--out", required=True, help="results file (JSON)")
    parser.add_argument("--tolerance", type=float, default=0.0, help="relative AUC difference allowed")
    parser.add_argument("--full", action="store_true", help="the demo as shipped, not shrunk")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cli_dir, mod_dir = pathlib.Path(tmp, "program"), pathlib.Path(tmp, "module")
        sets = [a for o in overrides(cli_dir, args.device, args.full) for a in ("--set", o)]
        run = subprocess.run([args.program, "train", "--config", str(DEMO), *sets], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"hetrec train exited {run.returncode}:\n{run.stderr}")
        cli_final = records(cli_dir / "metrics.jsonl", "final")[-1]
        cli_losses = [r["loss"] for r in records(cli_dir / "metrics.jsonl", "train")]
        logged = []
        summary = hetrec.Session(DEMO, overrides(mod_dir, args.device, args.full)).train(callback=logged.append)
        mod_losses = [r["loss"] for r in logged if r["type"] == "train"]
    auc_diff = abs(summary["auc"] - cli_final["auc"]) / max(abs(cli_final["auc"]), 1e-300)
    metrics = {
        "steps": summary["steps"],
        "program": {"auc": cli_final["auc"], "log_loss": cli_final["log_loss"], "losses": cli_losses},
        "module": {"auc": summary["auc"], "log_loss": summary["log_loss"], "losses": mod_losses},
        "auc_relative_difference": auc_diff,
        "losses_equal": cli_losses == mod_losses,
        "tolerance": args.tolerance,
        "agree": auc_diff <= args.tolerance,
    }
    result = {
        "benchmark": "python-parity",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": "cpu" if summary["device"].startswith("cpu") else gpu_name(),
        "commit": commit(args.program),
        "command": " ".join(shlex.quote(a) for a in sys.argv),
        "what": "hetrec Python module vs program: the demo (%s) with the same config and seed" %
                ("as shipped" if args.full else "shrunk to 32 steps of 512 samples"),
        "device": summary["device"],
        "metrics": metrics,
    }
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['device']}: program AUC {cli_final['auc']:.6f}, module AUC {summary['auc']:.6f}, "
          f"relative difference {auc_diff:.3g}; wrote {args.out}")
    return 0 if metrics["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
