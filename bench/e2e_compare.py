#!/usr/bin/env python3
"""Runs hetrec's e2e_bench and the PyTorch baseline (tools/torch_dlrm_bench.py) on the
same config and batch, in one process tree on one GPU, and writes the merged results
file bench/results/e2e-<date>-<tag>.json with samples/s of each and the ratios.

Usage: bench/e2e_compare.py --e2e-bench build/cuda/bench/e2e_bench --config configs/dlrm_dcnv2_capped.toml
                            --batch 16384 --tag dcnv2-capped-b16k [--precision tf32] [--modes eager,compile]
                            [--e2e-arg=--set --e2e-arg='model.dense_dtype="bf16"']
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--e2e-bench", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--precision", default="tf32")
    ap.add_argument("--rows", default="")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--e2e-arg", action="append", default=[],
                    help="an extra e2e_bench argument, e.g. --e2e-arg=--set --e2e-arg='model.dense_dtype=\"bf16\"' "
                         "(repeatable; recorded in the command)")
    ap.add_argument("--torch-timeout", type=int, default=300, help="seconds for the PyTorch baseline")
    ap.add_argument("--commit", default=os.environ.get("HETREC_COMMIT", "unknown"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        hetrec_json = os.path.join(tmp, "hetrec.json")
        cmd = [args.e2e_bench, "--config", args.config, "--batch", str(args.batch), "--steps", str(args.steps),
               "--precision", args.precision, "--commit", args.commit, "--json-out", hetrec_json]
        if args.rows:
            cmd += ["--rows", args.rows]
        cmd += args.e2e_arg
        subprocess.run(cmd, check=True)
        with open(hetrec_json) as f:
            result = json.load(f)
    torch_cmd = [sys.executable, os.path.join(ROOT, "tools", "torch_dlrm_bench.py"), "--config", args.config,
                 "--batch", str(args.batch), "--steps", str(args.steps), "--modes", args.modes]
    try:
        proc = subprocess.run(torch_cmd, capture_output=True, text=True, timeout=args.torch_timeout)
    except subprocess.TimeoutExpired:
        proc = subprocess.CompletedProcess(torch_cmd, 124, "", f"timed out after {args.torch_timeout} s")
    if proc.returncode != 0:
        print(proc.stderr[-4000:], file=sys.stderr)
        torch_out = {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    else:
        torch_out = json.loads(proc.stdout.strip().splitlines()[-1])
    m = result["metrics"]
    res = torch_out.get("results", {})
    for mode in ("eager", "compile"):
        r = res.get(mode, {})
        m[f"torch_{mode}_samples_per_s"] = r.get("samples_per_s")
        m[f"torch_{mode}_step_ms"] = r.get("step_ms")
        if m[f"torch_{mode}_samples_per_s"]:
            m[f"ratio_vs_torch_{mode}"] = m["hetrec_samples_per_s"] / m[f"torch_{mode}_samples_per_s"]
    m["torch"] = torch_out
    m["floor_vs_step"] = m["floor_ms"] / m["step_ms"] if m.get("step_ms") else None
    result["date"] = datetime.date.today().isoformat()
    result["command"] = " ".join(["bench/e2e_compare.py", "--e2e-bench", "build/cuda/bench/e2e_bench", "--config",
                                  args.config, "--batch", str(args.batch), "--tag", args.tag, "--precision",
                                  args.precision] + (["--rows", args.rows] if args.rows else []) +
                                 [f"--e2e-arg={a}" for a in args.e2e_arg])
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, f"e2e-{datetime.date.today():%Y%m%d}-{args.tag}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    te, tc = m.get("torch_eager_samples_per_s"), m.get("torch_compile_samples_per_s")
    print(f"{args.tag}: hetrec {m['hetrec_samples_per_s']:.0f} samples/s (step {m['step_ms']:.2f} ms, floor "
          f"{m['floor_ms']:.2f} ms); torch eager {te or float('nan'):.0f}, compile {tc or float('nan'):.0f}; "
          f"ratio vs compile {m.get('ratio_vs_torch_compile', float('nan')):.2f} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
