#!/usr/bin/env python3
"""Turns one tools/gpu_machine/step_variants.sh output folder into e2e results files
(bench/results/e2e-<date>-<tag>.json): for each workload, every variant's step time,
samples/s and per-phase times beside each phase's floor, and for the capped DCNv2 the
PyTorch baselines measured in the same call (per-table eager and compiled, and the fused
one-bag compiled one) with the ratio against the strongest. A profiled variant keeps the
timed GEMM calls of its step (profile_gemm_calls).

Phase floors (ms): a dense phase's GEMM arithmetic at the measured bf16 peak (the e2e
floor's own rule: element-wise traffic is taken as overlappable); the embedding phases'
least traffic at the measured copy bandwidth, taken from the tuner's workload floors
(tune/winners.json floor_us of the embedding forward and the fused sparse update on the
same batch and GPU), else the e2e floor's embedding bytes for both phases together.

Usage: bench/step_variants_summary.py RUN_DIR --date 20261202 [--out-dir bench/results]
"""
import argparse
import json
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gemm_flops(cfg, batch):
    """GEMM FLOPs per phase of one training step (forward and backward passes)."""
    m = cfg["model"]
    b = batch
    f = {}

    def mlp(widths, inp, want_dx):
        fwd = bwd = 0.0
        for i, w in enumerate(widths):
            fl = 2.0 * b * inp * w
            fwd += fl
            bwd += fl * (2 if (i > 0 or want_dx) else 1)
            inp = w
        return fwd, bwd

    f["bottom_mlp_fwd"], f["bottom_mlp_bwd"] = mlp(m["bottom_mlp"], m.get("num_dense", 13), False)
    tables = len(m.get("table_rows", [])) or len(m.get("tables", []))
    dim = m["embedding_dim"]
    if m.get("arch", "dlrm") == "dcnv2":
        n = (tables + 1) * dim
        r = m.get("cross_rank", 0)
        layers = m.get("cross_layers", 3)
        per = 2.0 * b * n * r * 2 if r > 0 else 2.0 * b * n * n
        f["interaction_fwd"] = layers * per
        f["interaction_bwd"] = layers * per * 2
        top_in = n
    else:
        feats = tables + 1
        top_in = dim + feats * (feats - 1) // 2
        f["interaction_fwd"] = f["interaction_bwd"] = 0.0
    f["top_mlp_fwd"], f["top_mlp_bwd"] = mlp(m["top_mlp"], top_in, True)
    return f


def tuner_floor_ms(batch, gpu):
    try:
        with open(os.path.join(ROOT, "tune", "winners.json")) as fh:
            w = json.load(fh)["winners"]
    except OSError:
        return {}
    out = {}
    for e in w:
        if f"batch {batch}" not in e.get("workload", "") or e["gpu"] != gpu:
            continue
        if e["kernel"] == "embedding_bag_forward":
            out["embedding_fwd"] = e["floor_us"] / 1e3
        if e["kernel"] == "embedding_sparse_update":
            out["embedding_bwd_update"] = e["floor_us"] / 1e3
    return out


def portable(command):
    """A run's command line with the device machine's folders replaced by names: the
    programs by their own names, the call's output folder by OUT."""
    return re.sub(r"\S*/bin/(\S+)", r"\1", re.sub(r"/\S*/out/", "OUT/", command))


def summarise(run_dir, tag_prefix, variants, cfg_path, batch, gpu, arch=None):
    with open(os.path.join(ROOT, cfg_path), "rb") as fh:
        cfg = tomllib.load(fh)
    if arch:
        cfg["model"]["arch"] = arch
    rows = {}
    for v in variants:
        for suffix in ("", "-profile"):
            p = os.path.join(run_dir, f"e2e-{tag_prefix}-{v}{suffix}.json")
            if os.path.exists(p):
                with open(p) as fh:
                    rows.setdefault(v, {})["profile" if suffix else "graph"] = json.load(fh)
    if not rows:
        return None
    any_run = next(iter(next(iter(rows.values())).values()))
    floor = any_run["metrics"]["floor"]
    peak = floor["peak_tflops"] * 1e12
    phase_floor = {k: fl / peak * 1e3 for k, fl in gemm_flops(cfg, batch).items()}
    tuned_floor = tuner_floor_ms(batch, gpu)
    phase_floor.update(tuned_floor)
    if not tuned_floor:  # the e2e floor's embedding bytes, forward and backward together
        phase_floor["embedding_fwd+embedding_bwd_update"] = floor["memory_ms"]
    out_variants = []
    for v, runs in rows.items():
        g = runs.get("graph") or runs["profile"]
        e = {"variant": v, "command": portable(g["command"]), "step_ms": g["metrics"]["step_ms"],
             "hetrec_samples_per_s": g["metrics"]["hetrec_samples_per_s"], "cuda_graph": g["metrics"]["cuda_graph"],
             "tuned_kernels": portable(g.get("tuned_kernels", ""))}
        if "profile" in runs:
            ph = runs["profile"]["metrics"]["phase_ms"]
            e["phases_ms"] = ph
            e["profile_step_ms"] = runs["profile"]["metrics"]["step_ms"]
            if runs["profile"]["metrics"].get("gemm_calls"):  # every GEMM of the profiled step, timed
                e["profile_gemm_calls"] = runs["profile"]["metrics"]["gemm_calls"]
            e["phase_floor_ms"] = {k: round(v, 4) for k, v in phase_floor.items()
                                   if k in ph or all(p in ph for p in k.split("+"))}
        out_variants.append(e)
    best = min(out_variants, key=lambda e: e["step_ms"])
    return {"config": cfg_path, "batch": batch, "floor_ms": any_run["metrics"]["floor_ms"], "floor": floor,
            "step_ms": best["step_ms"], "hetrec_samples_per_s": best["hetrec_samples_per_s"],
            "best_variant": best["variant"], "phases_ms": best.get("phases_ms"),
            "phase_floor_ms": best.get("phase_floor_ms"), "step_over_floor": best["step_ms"] / any_run["metrics"]["floor_ms"],
            "variants": out_variants, "gpu_model": any_run.get("model", "")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--date", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--variants", default="base,new,new16")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--tag", default="", help="inserted after the date in the file names (e.g. h100-schedule)")
    ap.add_argument("--command", default="tools/gpu_machine/step_variants.sh OUT COMMIT; bench/step_variants_summary.py OUT",
                    help="what reproduces the run, for the records")
    ap.add_argument("--note", default="", help="the records' note")
    args = ap.parse_args()
    variants = args.variants.split(",")
    workloads = [("full-b128k", "configs/dlrm_dcnv2_mlperf.toml", 131072, "mlperf-b128k-bf16-variants", None),
                 ("capped-b16k", "configs/dlrm_dcnv2_capped.toml", 16384, "dcnv2-capped-b16k-bf16-variants", None),
                 ("dlrm-capped-b64k", "configs/dlrm_dcnv2_capped.toml", 65536, "dlrm-capped-b64k-bf16-variants",
                  "dlrm")]
    gpu = "NVIDIA H200"
    for name in sorted(os.listdir(args.run_dir)):  # the GPU the runs name
        if name.startswith("e2e-") and name.endswith(".json"):
            with open(os.path.join(args.run_dir, name)) as fh:
                gpu = json.load(fh).get("gpu", gpu)
            break
    for prefix, cfg, batch, tag, arch in workloads:
        m = summarise(args.run_dir, prefix, variants, cfg, batch, gpu, arch)
        if m is None:
            continue
        if arch:
            m["arch"] = arch + " (model.arch override)"
        torch_path = os.path.join(args.run_dir, "torch-capped-b16k.json")
        if prefix == "capped-b16k" and os.path.exists(torch_path):
            with open(torch_path) as fh:
                t = json.load(fh)
            res = t["results"]
            m["torch_eager_samples_per_s"] = res.get("eager", {}).get("samples_per_s")
            m["torch_compile_samples_per_s"] = res.get("compile", {}).get("samples_per_s")
            m["torch_fused_compile_samples_per_s"] = res.get("fused", {}).get("samples_per_s")
            m["torch"] = t
            strongest = max(v for v in (m["torch_eager_samples_per_s"], m["torch_compile_samples_per_s"],
                                        m["torch_fused_compile_samples_per_s"]) if v)
            m["ratio_vs_strongest_torch"] = m["hetrec_samples_per_s"] / strongest
            gpu = t.get("gpu", gpu)
        doc = {"benchmark": "e2e", "date": args.date, "gpu": gpu, "commit": args.commit, "command": args.command,
               "metrics": m}
        if args.note:
            doc["note"] = args.note
        name = f"e2e-{args.date}-{args.tag}-{tag}.json" if args.tag else f"e2e-{args.date}-{tag}.json"
        path = os.path.join(args.out_dir, name)
        with open(path, "w") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
        print(path, round(m["step_ms"], 3), "ms", m["best_variant"], m.get("ratio_vs_strongest_torch", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
