#!/usr/bin/env python3
r"""Export round trip in PyTorch: hetrec's predictions against the PyTorch module built
from `hetrec export` (python/hetrec_torch.py), on the batch `hetrec predict` wrote.

From files already written:
    hetrec export  --config configs/demo.toml --checkpoint CKPT --output model.safetensors
    hetrec predict --config configs/demo.toml --checkpoint CKPT --output batch.safetensors
    tools/export_parity_torch.py --model model.safetensors --batch batch.safetensors

Or the whole chain (train a few steps, export, predict, compare) in --workdir:
    tools/export_parity_torch.py --hetrec build/cuda/src/cli/hetrec --config configs/demo.toml \
        [--set model.arch=dcnv2 ...] [--steps 200] [--samples 4096] \
        [--out bench/results/export-parity-<date>-h200.json]

Options: --device (cuda when available), --dtype float32 (float64), --tolerance 1e-6.
Prints a JSON results object (benchmark "export-parity", date, gpu, commit, command,
metrics {max_rel_diff, samples, ...}); exits 1 when max_rel_diff exceeds --tolerance.
TF32 is switched off, so fp32 GEMMs run in fp32.
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hetrec_torch  # noqa: E402

DEFAULT_TOLERANCE = 1e-6  # relative, on the predictions
DEFAULT_STEPS = 200       # training steps of the chain: every parameter moves from its start
DEFAULT_SAMPLES = 4096    # evaluation samples scored


def run_chain(args):
    """Trains, exports and predicts with the hetrec program; returns (model, batch) paths."""
    work = args.workdir or tempfile.mkdtemp(prefix="hetrec-export-parity-")
    os.makedirs(work, exist_ok=True)
    sets = []
    for kv in args.set or []:
        sets += ["--set", kv]
    ckpt_dir = os.path.join(work, "ckpt")
    train = [args.hetrec, "train", "--config", args.config] + sets + [
        "--set", f"train.steps={args.steps}", "--set", "train.eval_at_end=false", "--set", "train.eval_every=0",
        "--set", "train.progress=off", "--set", f"train.checkpoint_dir={ckpt_dir}",
        "--set", f"train.metrics_path={os.path.join(work, 'metrics.jsonl')}"]
    subprocess.run(train, check=True, stdout=sys.stderr)
    ckpts = sorted(f for f in os.listdir(ckpt_dir) if f.endswith(".hck"))
    if not ckpts:
        raise SystemExit(f"no checkpoint in {ckpt_dir}")
    ckpt = os.path.join(ckpt_dir, ckpts[-1])
    model = os.path.join(work, "model.safetensors")
    batch = os.path.join(work, "batch.safetensors")
    subprocess.run([args.hetrec, "export", "--config", args.config] + sets +
                   ["--checkpoint", ckpt, "--format", "safetensors", "--output", model], check=True, stdout=sys.stderr)
    subprocess.run([args.hetrec, "predict", "--config", args.config] + sets +
                   ["--checkpoint", ckpt, "--samples", str(args.samples), "--output", batch], check=True,
                   stdout=sys.stderr)
    return model, batch


def commit():
    if os.environ.get("HETREC_COMMIT"):
        return os.environ["HETREC_COMMIT"]
    try:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        return subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="<name>.safetensors from `hetrec export`")
    parser.add_argument("--batch", help="safetensors from `hetrec predict`")
    parser.add_argument("--hetrec", help="the hetrec program: train, export and predict first")
    parser.add_argument("--config", help="with --hetrec: the config to train")
    parser.add_argument("--set", action="append", help="with --hetrec: a config override (repeatable)")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    parser.add_argument("--workdir", help="with --hetrec: where its files go (default: a new temporary folder)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE)
    parser.add_argument("--out", help="also write the results object to this file")
    args = parser.parse_args()
    if args.hetrec:
        if not args.config:
            parser.error("--hetrec needs --config")
        args.model, args.batch = run_chain(args)
    elif not (args.model and args.batch):
        parser.error("give --model and --batch, or --hetrec and --config")

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtype = getattr(torch, args.dtype)
    model = hetrec_torch.load(args.model, device=args.device, dtype=dtype).eval()
    batch = hetrec_torch.load_batch(args.batch, device=args.device)
    _, batch_meta = hetrec_torch.read_safetensors(args.batch)
    with torch.no_grad():
        logits = model(batch["dense"].to(dtype), batch["offsets"], batch["ids"]).double()
    predictions = torch.sigmoid(logits)
    ref_p = batch["predictions"].double()
    ref_z = batch["logits"].double()
    rel = (predictions - ref_p).abs() / ref_p.abs().clamp_min(torch.finfo(torch.float64).tiny)
    desc = model.desc
    metrics = {
        "max_rel_diff": rel.max().item(),
        "mean_rel_diff": rel.mean().item(),
        "samples": int(logits.numel()),
        "max_abs_diff": (predictions - ref_p).abs().max().item(),
        "max_abs_logit_diff": (logits - ref_z).abs().max().item(),
        "tolerance": args.tolerance,
        "pass": rel.max().item() <= args.tolerance,
    }
    gpu = torch.cuda.get_device_name(torch.device(args.device)) if args.device.startswith("cuda") else "none"
    result = {
        "benchmark": "export-parity",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": gpu,
        "commit": commit(),
        "command": " ".join(shlex.quote(a) for a in sys.argv),
        "torch": torch.__version__,
        "device": args.device,
        "dtype": args.dtype,
        "model": {"arch": desc["arch"], "tables": len(desc["tables"]), "embedding_dim": desc["embedding_dim"],
                  "row_dtype": desc["row_dtype"], "checkpoint_step": desc["checkpoint"]["step"],
                  "cross_layers": desc.get("cross_layers", 0), "cross_rank": desc.get("cross_rank", 0),
                  "pooling": sorted({t["pooling"] for t in desc["tables"]})},
        # The engine that wrote the reference predictions (`hetrec predict`): cpu or gpu.
        "hetrec_device": batch_meta.get("device", "unknown"),
        "hetrec_overrides": args.set or [],
        "metrics": metrics,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0 if metrics["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
