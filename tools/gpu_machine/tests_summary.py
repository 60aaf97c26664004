#!/usr/bin/env python3
"""Turns the test logs of tools/gpu_machine/suite.sh's `tests` stage (one `<program>.log` per
GPU test program, GoogleTest's brief output) into a results record:
bench/results/gpu-tests-<date>-<tag>.json with, per program, its exit status and the counts of
passed, skipped and failed tests, and the names of any failed or skipped tests.

    tools/gpu_machine/tests_summary.py OUT_DIR --gpu "NVIDIA H200" --commit C --command "..." \\
        --out bench/results/gpu-tests-<date>-h200.json

Exit status 0 when every program exited 0 and no test failed, else 1.
"""
import argparse
import datetime
import glob
import json
import os
import re
import sys

COUNT = re.compile(r"^\[\s+(PASSED|SKIPPED|FAILED)\s+\]\s+(\d+) tests?")
NAMED = re.compile(r"^\[\s+(FAILED|SKIPPED)\s+\]\s+(\S+\.\S+)")
RC = re.compile(r"^(\S+) rc=(\d+)")


def parse_log(path):
    counts = {"passed": 0, "skipped": 0, "failed": 0}
    named = {"failed": [], "skipped": []}
    with open(path, errors="replace") as f:
        for line in f:
            m = COUNT.match(line)
            if m:
                counts[m.group(1).lower()] = int(m.group(2))
                continue
            m = NAMED.match(line)
            if m and m.group(2) not in named[m.group(1).lower()]:
                named[m.group(1).lower()].append(m.group(2))
    # --gtest_brief prints each failed test's line but no "N tests, listed below" count.
    counts["failed"] = max(counts["failed"], len(named["failed"]))
    return counts, named


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir", help="suite.sh's output folder")
    p.add_argument("--suite-log", help="suite.sh's own output (the `<program> rc=N` lines); default DIR/suite.log")
    p.add_argument("--gpu", required=True)
    p.add_argument("--commit", required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--note", default="")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rcs = {}
    suite_log = args.suite_log or os.path.join(args.dir, "suite.log")
    if os.path.exists(suite_log):
        with open(suite_log, errors="replace") as f:
            for line in f:
                m = RC.match(line)
                if m:
                    rcs[m.group(1)] = int(m.group(2))
    programs = {}
    for log in sorted(glob.glob(os.path.join(args.dir, "*_test_*.log"))):
        name = os.path.basename(log)[:-4]
        counts, named = parse_log(log)
        entry = {"rc": rcs.get(name), **counts}
        entry.update({f"{k}_tests": v for k, v in named.items() if v})
        programs[name] = entry
    if not programs:
        sys.exit(f"tests_summary: no <program>.log in {args.dir}")
    ok = all(e["rc"] == 0 and e["failed"] == 0 for e in programs.values())
    record = {
        "benchmark": "gpu-tests",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "gpu": args.gpu,
        "commit": args.commit,
        "command": args.command,
        "note": args.note,
        "metrics": {
            "programs": programs,
            "all_passed": ok,
            "tests_passed": sum(e["passed"] for e in programs.values()),
            "tests_skipped": sum(e["skipped"] for e in programs.values()),
            "tests_failed": sum(e["failed"] for e in programs.values()),
        },
    }
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    m = record["metrics"]
    print(f"{len(programs)} programs: {m['tests_passed']} passed, {m['tests_failed']} failed, "
          f"{m['tests_skipped']} skipped; wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
