#!/usr/bin/env python3
"""Puts the GEMM model's predicted rate beside published measured rates (benchmark "gemm-published").

For every [[rate]] of bench/published_gemm_rates.toml (a measured large GEMM on a GPU the
project describes in hw/ but may not own), runs `hetrec gemm select` for that GPU and shape
and records the predicted TFLOP/s, the published one and the error (predicted / published - 1).
Writes bench/results/gemm-published-<date>.json.

    python3 bench/gemm_published.py --hetrec build/cpu/src/cli/hetrec
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tomllib


def predict(hetrec, r):
    cmd = [hetrec, "gemm", "select", "--hw", r["hw"], "--m", str(r["m"]), "--n", str(r["n"]), "--k", str(r["k"]),
           "--dtype", r["dtype"]]
    if r.get("tf32"):
        cmd.append("--tf32")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"^predicted:\s+([0-9.]+) us, ([0-9.]+) TFLOP/s, limited by (\w+)", out, re.M)
    if not m:
        sys.exit(f"gemm_published: no prediction in the output of {' '.join(cmd)}:\n{out}")
    chosen = re.search(r"^chosen:\s+(.*)$", out, re.M)
    return float(m.group(1)), float(m.group(2)), m.group(3), chosen.group(1) if chosen else ""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hetrec", required=True, help="the hetrec program")
    p.add_argument("--rates", default="bench/published_gemm_rates.toml")
    p.add_argument("--out", default="")
    a = p.parse_args()
    with open(a.rates, "rb") as f:
        rates = tomllib.load(f)["rate"]
    entries = []
    for r in rates:
        us, tflops, limiter, chosen = predict(a.hetrec, r)
        error = tflops / r["tflops"] - 1.0
        entries.append({"hw": r["hw"], "m": r["m"], "n": r["n"], "k": r["k"], "dtype": r["dtype"] + ("+tf32" if r.get("tf32") else ""),
                        "published_tflops": r["tflops"], "predicted_tflops": tflops, "predicted_us": us,
                        "limited_by": limiter, "chosen": chosen, "error": error, "source": r["source"]})
        print(f"{r['hw']:10s} {r['m']:>5d}x{r['n']:<5d}x{r['k']:<6d} {entries[-1]['dtype']:10s} "
              f"published {r['tflops']:7.1f}  predicted {tflops:7.1f} TFLOP/s  {error:+6.1%}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    date = datetime.date.today()
    out = a.out or f"bench/results/gemm-published-{date:%Y%m%d}.json"
    by_hw = {}
    for e in entries:
        by_hw.setdefault(e["hw"], []).append(e["error"])
    result = {
        "benchmark": "gemm-published",
        "date": str(date),
        "gpu": "cpu",
        "commit": commit,
        "command": "python3 bench/gemm_published.py --hetrec build/cpu/src/cli/hetrec" +
                   (f" --rates {a.rates}" if a.rates != "bench/published_gemm_rates.toml" else ""),
        "metrics": {
            "entries": entries,
            "max_abs_error": max(abs(e["error"]) for e in entries),
            "mean_error_by_hw": {hw: sum(v) / len(v) for hw, v in by_hw.items()},
        },
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
