#!/usr/bin/env python3
"""Runs every command of README.md's ```sh blocks, as written, in a scratch directory.

The scratch directory holds copies of what the commands read (configs/, hw/, tune/, tools/,
python/, bench/ as links to the read-only source folders; configs/ copied) and, as the
explicit mapping rule of the README's program paths, a link `build/cpu` -> the build tree
under test (--build), so `build/cpu/src/cli/hetrec ...` runs that tree's program unchanged.
`build/cuda/...` is the same tree when it is a CUDA build.

Every command gets one classification, printed with its reason (RULES below; the first rule
that matches wins, a command no rule matches is run as written):
  run      run as written; it must exit 0
  budget   run as written plus `--set` limits that keep what later commands read (the
           checkpoint's name): the README's own `[--set key=value ...]`
  gpu      needs a GPU: skipped, and listed, when none is visible (else run, with
           `--set` step limits where the rule gives them)
  script   tools/demo.sh and tools/test.sh: not recursed into; the files and configs they
           use are checked, and demo.sh's train line runs with a step budget
  slow     run as written with a longer time limit (SLOW_TIMEOUT_S)
  elsewhere  run by another test of the suite, which the reason names: checked here, not run
  long     too slow for the test, with the reason: checked, not run
Leading `NAME=value` words set the command's environment, as a shell does.
Checked for every command, run or not: each repository path it names (configs/, bench/,
hw/, tools/, ...) exists, and each --option is one its subcommand accepts (`--help`).
A rule that matches no command fails the test (a stale rule hides a changed README).
Inputs that come from outside the README (train.txt, a Criteo TSV) are generated.

Exit status: 0 when every command passed or was skipped for its stated reason; 1 otherwise.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

# (pattern over the command, classification, reason, extra arguments when "budget" or "gpu" runs it)
RULES = [
    (r"^tools/demo\.sh\b", "script", "installs packages and builds the program; checked, and its train line "
     "runs with a 20-step budget", None),
    (r"^tools/test\.sh\b", "script", "it is CI itself (builds and runs the whole suite); its files are checked", None),
    (r"\bhetrec hw probe\b", "gpu", "measures the GPU", None),
    (r"\bhetrec gemm bench\b.*--time-budget 300\b", "long",
     "times every cuBLASLt configuration of the shape suite for up to 300 s, on a GPU", None),
    # On a GPU machine: the README's command with a step budget (the MLPerf model's epoch
    # is long).
    (r"^mpirun -np 2 build/cuda/src/cli/hetrec train\b", "gpu", "two GPUs; 50 steps, 65536 evaluation samples",
     ["--set", "train.steps=50", "--set", "train.eval_samples=65536"]),
    (r"\bbuild/cuda/", "gpu", "runs the CUDA build on a GPU", None),
    (r"\bhetrec gemm calibrate .*--folds 5\b", "slow",
     "fits the model 5 times over the full 5,607-configuration oracle: about 90 s on 2 cores", None),
    (r"\bcpack -G\b", "elsewhere",
     "tests/install/test_deb.sh builds the package from this build tree and checks its contents", None),
    # The demo's step count, and so its checkpoint's name, is kept: the same number of
    # steps of 16 samples each, and a 4096-sample evaluation.
    (r"^build/cpu/src/cli/hetrec train --config configs/demo\.toml$", "budget",
     "the demo's steps with 16-sample batches (the checkpoint keeps its name)", "demo_same_steps"),
    (r"^mpirun -np 4 build/cpu/src/cli/hetrec train\b", "budget", "20 steps, 4096 evaluation samples",
     ["--set", "train.steps=20", "--set", "train.eval_samples=4096"]),
]

SLOW_TIMEOUT_S = 400  # the "slow" commands' limit (the default is 120 s)

# Rules that may match nothing: the fallback for any other command of the CUDA build.
FALLBACK_RULES = {r"\bbuild/cuda/"}

# Environment for mpirun as CI runs it (root, 2 cores): the README's command unchanged.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMP_NUM_THREADS": "1"}

REPO_DIRS_LINKED = ["bench", "hw", "tune", "tools", "python", "docs", "fuzz"]
REPO_DIRS_COPIED = ["configs"]
REPO_PATH = re.compile(r"^(configs|bench|hw|tune|tools|python|docs)/")


def sh_blocks(text):
    """The lines of every ```sh block, with their README line numbers."""
    out, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            inside = (not inside) and stripped == "```sh"
            continue
        if inside and stripped and not stripped.startswith("#"):
            out.append((number, stripped))
    return out


def strip_comment(command):
    """The command without a trailing `# comment` (outside quotes)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return " ".join(shlex.quote(t) if re.search(r"[^\w@%+=:,./-]", t) else t for t in lexer)


def strip_optional(command):
    """Removes the README's optional groups: `[--set key=value ...]`, `[--recipe plan.toml]`."""
    return re.sub(r"\s*\[--[^\]]*\]", "", command).strip()


def classify(command):
    for index, (pattern, kind, reason, extra) in enumerate(RULES):
        if re.search(pattern, command):
            return index, kind, reason, extra
    return None, "run", "runs as written", None


def gpu_count():
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in r.stdout.splitlines() if line.startswith("GPU ")) if r.returncode == 0 else 0


def criteo_tsv(path, lines=256):
    """A tiny Criteo TSV: label, 13 integer fields, 26 categorical fields of 8 hex digits,
    some of them empty (as in the real file)."""
    with open(path, "w") as f:
        for i in range(lines):
            dense = ["" if (i + j) % 11 == 0 else str((i * 7 + j * 13) % 97) for j in range(13)]
            cats = ["" if (i + j) % 17 == 0 else "%08x" % ((i * 2654435761 + j * 40503) & 0xFFFFFFFF) for j in range(26)]
            f.write("\t".join([str(i % 2)] + dense + cats) + "\n")


class Runner:
    def __init__(self, args):
        self.args = args
        self.src = os.path.abspath(args.source)
        self.build = os.path.abspath(args.build)
        self.hetrec = os.path.join(self.build, "src", "cli", "hetrec")
        self.work = tempfile.mkdtemp(prefix="hetrec_readme_")
        self.gpus = gpu_count()
        self.cuda_build = "device compiler:" in self.version()
        self.help = {}
        self.failures = []
        self.rows = []

    def version(self):
        r = subprocess.run([self.hetrec, "--version"], capture_output=True, text=True)
        return r.stdout

    def prepare(self):
        for d in REPO_DIRS_LINKED:
            if os.path.exists(os.path.join(self.src, d)):
                os.symlink(os.path.join(self.src, d), os.path.join(self.work, d))
        for d in REPO_DIRS_COPIED:
            shutil.copytree(os.path.join(self.src, d), os.path.join(self.work, d))
        os.makedirs(os.path.join(self.work, "build"))
        # The mapping rule: the README's build/cpu is the tree under test.
        os.symlink(self.build, os.path.join(self.work, "build", "cpu"))
        if self.cuda_build:
            os.symlink(self.build, os.path.join(self.work, "build", "cuda"))

    def fail(self, line, command, why):
        self.failures.append("%s:%d: %s\n    %s" % (os.path.basename(self.args.readme), line, command, why))

    def subcommand_help(self, words):
        """`hetrec <sub> [<sub2>] --help`, or None when the build has no such command."""
        key = tuple(words)
        if key not in self.help:
            r = subprocess.run([self.hetrec] + list(words) + ["--help"], capture_output=True, text=True)
            self.help[key] = r.stdout if r.returncode == 0 else None
        return self.help[key]

    def static_checks(self, line, command):
        """Paths the command names exist; options are ones its subcommand accepts."""
        words = shlex.split(command)
        ok = True
        for w in words:
            value = w.split("=", 1)[1] if w.startswith("--") and "=" in w else w
            for part in value.split(","):
                if REPO_PATH.match(part) and not os.path.exists(os.path.join(self.src, part)):
                    self.fail(line, command, "names '%s', which the repository does not have" % part)
                    ok = False
        at = next((i for i, w in enumerate(words) if w.endswith("/hetrec")), None)
        if at is not None:
            rest = words[at + 1:]
            sub = [] if not rest or rest[0].startswith("-") else rest[:2] if rest[0] in ("data", "hw", "gemm") else rest[:1]
            if sub:
                text = self.subcommand_help(sub)
                if text is None:
                    if not re.search(r"\bbuild/cuda/", command):
                        self.fail(line, command, "`hetrec %s` is not a command of this build" % " ".join(sub))
                        ok = False
                else:
                    for w in rest:
                        if w.startswith("--"):
                            opt = w.split("=", 1)[0]
                            if not re.search(r"(^|[\s,])" + re.escape(opt) + r"\b", text):
                                self.fail(line, command, "`hetrec %s` has no option %s" % (" ".join(sub), opt))
                                ok = False
        return ok

    def demo_budget(self):
        cfg = tomllib.load(open(os.path.join(self.work, "configs", "demo.toml"), "rb"))
        samples = cfg["data"]["synthetic"]["train_samples"]
        batch = cfg["train"]["batch_size"]
        epochs = cfg["train"].get("epochs", 1)
        steps = -(-samples // batch) * epochs
        return ["--set", "data.synthetic.train_samples=%d" % (steps * 16 // epochs), "--set", "train.batch_size=16",
                "--set", "train.eval_samples=4096", "--set", "train.threads=2"]

    def execute(self, line, command, argv_extra=None, env_extra=None, timeout=120):
        words = shlex.split(command) + (argv_extra or [])
        env = dict(os.environ)
        env.update(env_extra or {})
        while words and re.match(r"^[A-Za-z_]\w*=", words[0]):  # NAME=value before the program
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        if "train.txt" in words and not os.path.exists(os.path.join(self.work, "train.txt")):
            criteo_tsv(os.path.join(self.work, "train.txt"))
        start = time.time()
        try:
            r = subprocess.run(words, cwd=self.work, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail(line, command, "did not finish in %d s" % timeout)
            return False, timeout
        seconds = time.time() - start
        if r.returncode != 0:
            tail = "\n    ".join((r.stderr or r.stdout).strip().splitlines()[-6:])
            self.fail(line, command, "exit %d:\n    %s" % (r.returncode, tail))
            return False, seconds
        return True, seconds

    def check_script(self, line, command):
        """tools/demo.sh and tools/test.sh: the file, the files and configs it names, its
        syntax; demo.sh's train line, run with a step budget."""
        script = shlex.split(command)[0]
        path = os.path.join(self.src, script)
        if not os.access(path, os.X_OK):
            self.fail(line, command, "%s is not an executable file" % script)
            return "FAIL"
        if subprocess.run(["bash", "-n", path]).returncode != 0:
            self.fail(line, command, "%s: bash -n reports a syntax error" % script)
            return "FAIL"
        text = open(path).read()
        ok = True
        for named in sorted(set(re.findall(r"(?<![\w/$])((?:configs|tools|fuzz)/[\w./-]+)", text))):
            if not os.path.exists(os.path.join(self.src, named)):
                self.fail(line, command, "%s names '%s', which the repository does not have" % (script, named))
                ok = False
        presets = open(os.path.join(self.src, "CMakePresets.json")).read()
        for preset in re.findall(r"--preset[ =]+([\w-]+)", text):
            if '"name": "%s"' % preset not in presets:
                self.fail(line, command, "%s uses preset '%s', which CMakePresets.json does not define" % (script, preset))
                ok = False
        if script.endswith("demo.sh"):
            m = re.search(r'exec "\$build/src/cli/hetrec" (.*?) "\$@"', text)
            if not m:
                self.fail(line, command, "demo.sh: no `exec \"$build/src/cli/hetrec\" ... \"$@\"` line to check")
                return "FAIL"
            demo = "build/cpu/src/cli/hetrec " + m.group(1)
            ok = self.static_checks(line, demo) and ok
            budget = ["--set", "train.steps=20", "--set", "train.eval_samples=4096", "--set", "train.threads=2",
                      "--set", "train.progress=off", "--set", "train.metrics_path=out/demo-sh/metrics.jsonl",
                      "--set", "train.checkpoint_dir=out/demo-sh/checkpoints"]
            ran, _ = self.execute(line, demo, budget)
            ok = ran and ok
        return "ok" if ok else "FAIL"

    def run(self):
        self.prepare()
        text = open(self.args.readme).read()
        commands = sh_blocks(text)
        if not commands:
            self.failures.append("%s: no ```sh block with a command" % self.args.readme)
        used = set()
        for line, raw in commands:
            command = strip_comment(strip_optional(raw))
            index, kind, reason, extra = classify(command)
            if index is not None:
                used.add(index)
            start = time.time()
            checked = self.static_checks(line, command)
            status = "ok"
            if kind == "gpu":
                needs = 2 if command.startswith("mpirun -np 2") else 1
                if self.gpus >= needs and self.cuda_build:
                    env = MPI_ENV if command.startswith("mpirun") else None
                    if "plan2.toml" in command and not os.path.exists(os.path.join(self.work, "plan2.toml")):
                        self.execute(line, "build/cpu/src/cli/hetrec plan --config configs/dlrm_dcnv2_mlperf.toml "
                                     "--hw h200_sxm --gpus 2 --out plan2.toml")
                    status = "ok" if self.execute(line, command, extra, env, timeout=600)[0] else "FAIL"
                else:
                    status = "skipped"
                    reason += " (%d GPU%s visible%s)" % (self.gpus, "" if self.gpus == 1 else "s",
                                                          "" if self.cuda_build else ", not a CUDA build")
            elif kind == "script":
                status = self.check_script(line, command)
            elif kind in ("long", "elsewhere"):
                status = "checked, not run"
            elif kind == "slow":
                status = "ok" if self.execute(line, command, extra, None, timeout=SLOW_TIMEOUT_S)[0] else "FAIL"
            else:
                argv = self.demo_budget() if extra == "demo_same_steps" else extra
                env = MPI_ENV if command.startswith("mpirun") else None
                status = "ok" if self.execute(line, command, argv, env)[0] else "FAIL"
            if not checked:
                status = "FAIL"
            self.rows.append((line, kind, status, time.time() - start, command, reason))
        if not self.args.allow_unused_rules:
            for index, rule in enumerate(RULES):
                if index not in used and rule[0] not in FALLBACK_RULES:
                    self.failures.append("rule %r (%s) matches no README command: update RULES" % (rule[0], rule[1]))
        for line, kind, status, seconds, command, reason in self.rows:
            print("%s:%-4d %-7s %-17s %5.1f s  %s\n%38s%s" % (os.path.basename(self.args.readme), line, kind, status, seconds, command, "", reason))
        skipped = [r for r in self.rows if r[2] == "skipped"]
        print("\n%d commands: %d skipped (%s)" % (len(self.rows), len(skipped),
                                                  ", ".join("line %d" % r[0] for r in skipped) or "none"))
        if self.failures:
            print("\nFAILED:\n" + "\n".join(self.failures))
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            print("scratch directory kept: " + self.work)
        return 1 if self.failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", required=True, help="repository root")
    p.add_argument("--build", required=True, help="the build tree under test (it holds src/cli/hetrec)")
    p.add_argument("--readme", help="README to run (default: <source>/README.md)")
    p.add_argument("--allow-unused-rules", action="store_true", help="a README that is not the repository's")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = p.parse_args()
    args.readme = args.readme or os.path.join(args.source, "README.md")
    if not os.access(os.path.join(args.build, "src", "cli", "hetrec"), os.X_OK):
        print("no program at %s/src/cli/hetrec" % args.build)
        return 1
    return Runner(args).run()


if __name__ == "__main__":
    sys.exit(main())
