#!/usr/bin/env python3
"""How well the analytical GEMM model predicts the time of the fastest kernel, shape by shape,
on a recorded cuBLASLt oracle (`hetrec gemm bench`): for every shape, `hetrec gemm select`'s
predicted time (the model's best configuration, what the planner's step model prices) over
the fastest time the oracle measured (any timed configuration or the heuristic's own pick).
Shapes are split by precision and by whether both operands' rows are aligned to 16 bytes
(packed operands: a row of A holds K values, or M when stored transposed; of B, N or K);
the unaligned ones run the library's narrow-copy kernels. Needs no GPU.

Writes bench/results/gemm-prediction-<date>-<tag>.json: per group the shapes, the median of
predicted / measured and the mean |log(predicted / measured)|, over all shapes and over
those whose fastest kernel took at least 100 us (the ones that weigh in a training step).

Usage: bench/gemm_prediction_check.py --hetrec build/cuda/src/cli/hetrec
           --oracle bench/results/gemm-oracle-20261207-h100-corpus.json.xz --hw h100_sxm
           --date 20261207 --tag h100-corpus [--commit HASH] [--out-dir bench/results]
"""
import argparse
import json
import lzma
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

OPERAND_BYTES = {"bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4}
FULL_ALIGNMENT = 16  # bytes (gemm_perf/gemm_problem.h, kFullOperandAlignment)
LONG_US = 100.0


def row_alignment(row_elements, rows, element_bytes):
    """As packed_row_alignment in gemm_perf/gemm_problem.cpp."""
    if rows <= 1 or row_elements <= 1:
        return FULL_ALIGNMENT
    stride, a = row_elements * element_bytes, 1
    while a < FULL_ALIGNMENT and stride % (2 * a) == 0:
        a *= 2
    return a


def open_json(path):
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
        return json.load(f)


def select_args(hetrec, hw, shape):
    precision = shape["precision"]
    args = [hetrec, "gemm", "select", "--hw", hw, "--m", str(shape["m"]), "--n", str(shape["n"]),
            "--k", str(shape["k"]), "--dtype", "fp32" if precision in ("tf32", "fp32") else precision,
            "--out-dtype", shape["d_type"],
            "--epilogue", {"relu_bias": "bias_relu"}.get(shape.get("epilogue", "none"), shape.get("epilogue", "none"))]
    if shape["trans_a"]:
        args.append("--trans-a")
    if shape["trans_b"]:
        args.append("--trans-b")
    if precision == "tf32":
        args.append("--tf32")
    return args


def predicted_us(args):
    run = subprocess.run(args, capture_output=True, text=True)
    found = re.search(r"^predicted: ([0-9.]+) us", run.stdout, re.M)
    if not found:
        sys.exit(f"gemm_prediction_check: {' '.join(args)} failed: {run.stderr.strip()}")
    return float(found.group(1))


def summary(errors):
    if not errors:
        return {"shapes": 0}
    errors = sorted(errors)
    return {"shapes": len(errors), "median_predicted_over_measured": round(math.exp(errors[len(errors) // 2]), 4),
            "mean_abs_log_error": round(sum(abs(e) for e in errors) / len(errors), 4)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hetrec", required=True)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--hw", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                      "bench", "results"))
    a = ap.parse_args()
    oracle = open_json(a.oracle)
    shapes = [s for s in oracle["shapes"]
              if "heuristic" in s and s["precision"] in OPERAND_BYTES and not s.get("accumulate")]
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        predictions = list(pool.map(predicted_us, (select_args(a.hetrec, a.hw, s) for s in shapes)))
    groups = {}
    for shape, predicted in zip(shapes, predictions):
        size = OPERAND_BYTES[shape["precision"]]
        m, n, k = shape["m"], shape["n"], shape["k"]
        a_align = row_alignment(m, k, size) if shape["trans_a"] else row_alignment(k, m, size)
        b_align = row_alignment(k, n, size) if shape["trans_b"] else row_alignment(n, k, size)
        measured = min([row[9] for row in shape["candidates"]] + [shape["heuristic"]["median_us"]])
        error = math.log(predicted / measured)
        aligned = "aligned" if min(a_align, b_align) == FULL_ALIGNMENT else "unaligned"
        for key in (f"{shape['precision']}.{aligned}", f"all.{aligned}"):
            g = groups.setdefault(key, {"all": [], "long": []})
            g["all"].append(error)
            if measured >= LONG_US:
                g["long"].append(error)
    metrics = {"oracle": os.path.basename(a.oracle), "hw": a.hw, "long_kernel_us": LONG_US,
               "groups": {key: {"all": summary(g["all"]), "long": summary(g["long"])} for key, g in sorted(groups.items())}}
    for key in ("all.aligned", "all.unaligned"):
        if key in metrics["groups"]:
            metrics[key.replace(".", "_") + "_mean_abs_log_error"] = metrics["groups"][key]["all"].get("mean_abs_log_error")
    record = {"benchmark": "gemm-prediction", "date": a.date, "gpu": oracle.get("gpu", ""), "commit": a.commit,
              "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]), "metrics": metrics}
    out = os.path.join(a.out_dir, f"gemm-prediction-{a.date}-{a.tag}.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    for key, g in metrics["groups"].items():
        print(f"{key:16} {g['all']}  >= {LONG_US:g} us: {g['long']}")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
