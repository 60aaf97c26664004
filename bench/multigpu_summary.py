#!/usr/bin/env python3
"""Summarises data-parallel e2e_bench runs (benchmark "multigpu", bench/README.md).

Each run is an e2e_bench results file written under `mpirun -np N` (world_size N), the
planner's prediction for the same recipe (`hetrec plan --evaluate ... --json`), and the
one-GPU e2e_bench file it scales against (same model, batch and precision). Writes
bench/results/multigpu-<date>[-<tag>].json with, per run, the measured and predicted
step, their ratio and the scaling, and overall the best run's samples/s, its scaling
and the largest step error of the runs given a prediction.

    python3 bench/multigpu_summary.py --tag h200x2 \\
        --run RUN.json:PREDICTION.json:ONE_GPU.json [--run ...]
"""
import argparse
import datetime
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", action="append", required=True,
                   help="E2E.json[:PREDICTION.json[:ONE_GPU_E2E.json]] (repeatable; empty fields allowed)")
    p.add_argument("--tag", default="")
    p.add_argument("--out", default="")
    p.add_argument("--note", action="append", default=[], help="a sentence recorded with the results (repeatable)")
    a = p.parse_args()

    runs, gpu, commit, date = [], None, None, None
    for spec in a.run:
        parts = (spec.split(":") + ["", ""])[:3]
        run = load(parts[0])
        m = run["metrics"]
        gpu, commit, date = run["gpu"], run["commit"], run["date"]
        entry = {
            "file": os.path.basename(parts[0]),
            "command": "mpirun -np %d %s" % (run.get("world_size", 1), run["command"]) if run.get("world_size", 1) > 1
                       else run["command"],
            "gpus": run.get("world_size", 1),
            "sharding": m.get("sharding", ""),
            "batch": m["batch"],
            "overrides": m.get("overrides", []),
            "step_ms": m["step_ms"],
            "rank_step_ms": m.get("rank_step_ms", [m["step_ms"]]),
            "samples_per_s": m["hetrec_samples_per_s"],
            "samples_per_s_per_gpu": m["hetrec_samples_per_s"] / run.get("world_size", 1),
        }
        if parts[1]:
            pred = load(parts[1])["predicted"]
            entry["predicted_step_ms"] = pred["step_ms"]
            entry["step_error"] = m["step_ms"] / pred["step_ms"] - 1.0
        if parts[2]:
            one = load(parts[2])["metrics"]
            entry["one_gpu_step_ms"] = one["step_ms"]
            entry["scaling_vs_1gpu"] = m["hetrec_samples_per_s"] / one["hetrec_samples_per_s"]
        runs.append(entry)

    multi = [r for r in runs if r["gpus"] > 1]
    best = max(multi or runs, key=lambda r: r["samples_per_s"])
    errors = [abs(r["step_error"]) for r in runs if "step_error" in r]
    out = {
        "benchmark": "multigpu",
        "date": date or datetime.date.today().isoformat(),
        "gpu": gpu,
        "commit": commit,
        "command": "python3 bench/multigpu_summary.py " + " ".join("--run " + s for s in a.run),
        "metrics": {
            "gpus": max(r["gpus"] for r in runs),
            "samples_per_s": best["samples_per_s"],
            "samples_per_s_per_gpu": best["samples_per_s_per_gpu"],
            "scaling_vs_1gpu": best.get("scaling_vs_1gpu"),
            "best_run": best["file"],
            "max_step_error": max(errors) if errors else None,
            "runs": runs,
        },
        "notes": a.note,
    }
    path = a.out or "bench/results/multigpu-%s%s.json" % (out["date"].replace("-", ""), "-" + a.tag if a.tag else "")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    for r in runs:
        print("%-62s %d GPU %8.2f ms %6.3f M/s%s%s" % (
            r["file"], r["gpus"], r["step_ms"], r["samples_per_s"] / 1e6,
            "  pred %6.2f ms (%+.1f%%)" % (r["predicted_step_ms"], 100 * r["step_error"]) if "step_error" in r else "",
            "  x%.2f vs 1 GPU" % r["scaling_vs_1gpu"] if "scaling_vs_1gpu" in r else ""))
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
