#!/usr/bin/env python3
"""Turns a folder of e2e_bench records of GEMM-selection pairs into one gemm-engine results
file (bench/results/gemm-engine-<date>-<tag>.json). A pair is the records
e2e-<pair>-library.json, e2e-<pair>-timed.json and, where run, e2e-<pair>-timed2.json and
e2e-<pair>-library2.json: the same step with model.gemm_selection = "library" and with
"model" and a timed shortlist, run back to back in one device call. Each side's step time
is the mean of its runs' medians; the pair's ratio is library_ms / model_ms (above 1: the
model's selection is faster). Several RUN_DIRs (one per device call, each holding a pair's
four runs) pool their runs per pair; library_spread_ms is the spread of the library's own
runs, the noise a ratio below 1 is to be read against.

Usage: bench/gemm_engine_summary.py RUN_DIR [RUN_DIR ...] --date 20261207 --tag h100 [--out-dir bench/results]
"""
import argparse
import glob
import json
import os
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", metavar="run_dir")
    ap.add_argument("--date", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                      "bench", "results"))
    a = ap.parse_args()
    pairs, gpu, commit = [], None, None
    names = sorted({re.match(r"e2e-(.*)-library\.json$", os.path.basename(lib)).group(1)
                    for d in a.run_dirs for lib in glob.glob(os.path.join(d, "e2e-*-library.json"))})
    for name in names:
        sides = {"library": [], "model": []}
        for d in a.run_dirs:
            for side, suffixes in (("library", ("library", "library2")), ("model", ("timed", "timed2"))):
                for s in suffixes:
                    p = os.path.join(d, f"e2e-{name}-{s}.json")
                    if os.path.exists(p):
                        sides[side].append(load(p))
        if not sides["model"]:
            sys.exit(f"gemm_engine_summary: {name} has no e2e-{name}-timed.json")
        first = sides["model"][0]
        m = first["metrics"]
        gpu, commit = gpu or first["gpu"], commit or first["commit"]
        if any(r["gpu"] != gpu for s in sides.values() for r in s):
            sys.exit(f"gemm_engine_summary: {name} was not measured on {gpu} alone")
        sel = m["gemm_selection"]
        precision = m["floor"]["gemm_precision"]
        lib_ms = [r["metrics"]["step_ms"] for r in sides["library"]]
        model_ms = [r["metrics"]["step_ms"] for r in sides["model"]]
        pair = {
            "pair": name,
            "config": m["config"],
            "arch": "dcnv2" if "dcnv2" in name or name.startswith("full") else "dlrm",
            "batch": m["batch"],
            "precision": precision,
            "library_ms": sum(lib_ms) / len(lib_ms),
            "model_ms": sum(model_ms) / len(model_ms),
            "library_runs_ms": lib_ms,
            "model_runs_ms": model_ms,
            "library_spread_ms": max(lib_ms) - min(lib_ms),
            "timed_shortlist": sel.get("timed_shortlist"),
            "shortlists_timed": sel.get("timed"),
            "kept_other_than_router": sel.get("timed_other"),
            "small_gemms_on_kernel": sum(1 for d in sel.get("small_gemm_decisions", []) if d["runs"] == "small_gemm"),
            "floor_ms": m["floor_ms"],
        }
        pair["library_over_model"] = pair["library_ms"] / pair["model_ms"]
        pairs.append(pair)
    if not pairs:
        sys.exit(f"gemm_engine_summary: no e2e-*-library.json in {' '.join(a.run_dirs)}")
    worst = min(pairs, key=lambda p: p["library_over_model"])
    out = {
        "benchmark": "gemm-engine",
        "date": f"{a.date[:4]}-{a.date[4:6]}-{a.date[6:]}",
        "gpu": gpu,
        "commit": commit,
        "command": "e2e_bench --config CONFIG --batch B --tuned-kernels tune/winners.json --set "
                   "model.gemm_selection=\"library\"|\"model\" --set model.gemm_timed_shortlist=0|5 --set "
                   "model.gemm_cache=\"none\" (per pair: library, model, model, library in one device call; "
                   "tools/gpu_machine/gemm_engine_pairs.sh); bench/gemm_engine_summary.py",
        "metrics": {
            "pairs": pairs,
            "worst_model_vs_library": worst["library_over_model"],
            "worst_pair": worst["pair"],
            "what": "step time with cuBLASLt's heuristic (library) and with the model's selection and a timed "
                    "shortlist of 5 (model), mean of the runs' median steps; library_over_model above 1: the "
                    "model's selection is faster; library_spread_ms: max - min of the library's own runs",
        },
    }
    path = os.path.join(a.out_dir, f"gemm-engine-{a.date}-{a.tag}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{path}: {len(pairs)} pairs, worst library/model {worst['library_over_model']:.4f} ({worst['pair']})")
    for p in pairs:
        print(f"  {p['pair']:22s} library {p['library_ms']:8.3f} ms  model {p['model_ms']:8.3f} ms  "
              f"ratio {p['library_over_model']:.4f}  ({len(p['library_runs_ms'])} + {len(p['model_runs_ms'])} runs, "
              f"library spread {p['library_spread_ms']:.3f} ms)")


if __name__ == "__main__":
    main()
