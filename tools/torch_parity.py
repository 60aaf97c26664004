#!/usr/bin/env python3
"""Numerical parity of hetrec's CPU engine with a PyTorch model written independently.

For each config: hetrec writes the synthetic training samples to a binary columnar file
(`hetrec data synth`) and trains on that file for N steps, saving its initial and final
state (checkpoints) and the loss of every step (metrics). This script builds the same
model in PyTorch from the initial checkpoint, trains it on the very same samples with
the same optimizers and learning-rate schedule, and compares the loss curves and every
final parameter and optimizer slot. Everything runs in fp32 on the CPU.

Usage: tools/torch_parity.py --hetrec build/cpu/src/cli/hetrec [--steps 50]
                             [--json bench/results/torch-parity-YYYYMMDD.json] [CONFIG ...]
"""
import argparse
import datetime
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import tomllib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_CONFIGS = [os.path.join(HERE, "parity", n) for n in ("dlrm.toml", "dcnv2_lowrank.toml", "dcnv2_fullrank_adam.toml")]

# core/dtype.h enum order
DTYPES = {0: np.float32, 5: np.float64, 6: np.int32, 7: np.int64, 8: np.uint8}


def read_checkpoint(path):
    """Parses a hetrec checkpoint (layout in src/train/checkpoint.h) into {name: array}."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"HETRECCK", f"{path}: not a checkpoint"
    pos = 8
    (version, meta_len) = struct.unpack_from("<II", data, pos)
    pos += 8
    meta = json.loads(data[pos:pos + meta_len])
    pos += meta_len
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    tensors = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<I", data, pos)
        pos += 4
        name = data[pos:pos + name_len].decode()
        pos += name_len
        dtype, rank = struct.unpack_from("<BB", data, pos)
        pos += 2
        shape = struct.unpack_from("<" + "q" * rank, data, pos)
        pos += 8 * rank
        (nbytes,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        if dtype not in DTYPES:
            raise SystemExit(f"{path}: tensor {name} has a 16/8-bit dtype; parity runs use fp32 rows")
        tensors[name] = np.frombuffer(data[pos:pos + nbytes], dtype=DTYPES[dtype]).reshape(shape).copy()
        pos += nbytes
    return meta, tensors


def read_binary_data(path):
    """Parses a hetrec binary columnar file (docs/data_format.md) into whole arrays."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"HRECDATA", f"{path}: not a hetrec data file"
    num_dense, num_tables, group_samples, _mapping, _ = struct.unpack_from("<IIIII", data, 12)
    rows = struct.unpack_from("<" + "Q" * num_tables, data, 32)
    assert data[-8:] == b"HRECTAIL"
    total, groups = struct.unpack_from("<QQ", data, len(data) - 32)
    offsets = struct.unpack_from("<" + "Q" * groups, data, len(data) - 32 - 8 * groups)
    labels, dense = [], []
    lengths = [[] for _ in range(num_tables)]
    ids = [[] for _ in range(num_tables)]
    for off in offsets:
        assert data[off:off + 4] == b"RGRP"
        n, _first, _payload = struct.unpack_from("<IQQ", data, off + 4)
        p = off + 24
        labels.append(np.frombuffer(data, np.uint8, n, p).astype(np.float32))
        p += (n + 3) // 4 * 4
        dense.append(np.frombuffer(data, np.float32, n * num_dense, p).reshape(num_dense, n).T)
        p += 4 * n * num_dense
        for t in range(num_tables):
            ln = np.frombuffer(data, np.uint32, n, p).astype(np.int64)
            p += 4 * n
            k = int(ln.sum())
            lengths[t].append(ln)
            ids[t].append(np.frombuffer(data, np.uint32, k, p).astype(np.int64))
            p += 4 * k
    return {
        "labels": np.concatenate(labels),
        "dense": np.concatenate(dense).astype(np.float32),
        "lengths": [np.concatenate(x) for x in lengths],
        "ids": [np.concatenate(x) for x in ids],
        "rows": rows,
        "samples": total,
    }


def batch_slices(data, first, size, dtype):
    """Dense, labels and per-table (ids, offsets) of samples [first, first + size)."""
    out = {"dense": torch.from_numpy(data["dense"][first:first + size].copy()).to(dtype),
           "labels": torch.from_numpy(data["labels"][first:first + size].copy()).to(dtype), "bags": []}
    for t in range(len(data["lengths"])):
        ln = data["lengths"][t]
        starts = np.concatenate([[0], np.cumsum(ln)])
        lo, hi = starts[first], starts[first + size]
        offsets = starts[first:first + size] - lo
        out["bags"].append((torch.from_numpy(data["ids"][t][lo:hi].copy()), torch.from_numpy(offsets.copy())))
    return out


class Reference(torch.nn.Module):
    """DLRM / DLRM-DCNv2 as the DLRM and TorchRec references define them."""

    def __init__(self, cfg, state, dtype):
        super().__init__()
        m = cfg["model"]
        self.arch = m.get("arch", "dlrm")
        self.dim = m["embedding_dim"]
        self.interaction_self = m.get("interaction_self", False)
        self.pooling = m.get("pooling", "sum")
        p = lambda name: torch.nn.Parameter(torch.from_numpy(state[name].copy()).to(dtype))
        self.bottom = torch.nn.ParameterList()
        for i in range(len(m["bottom_mlp"])):
            self.bottom.extend([p(f"bottom_mlp.{i}.weight"), p(f"bottom_mlp.{i}.bias")])
        self.top = torch.nn.ParameterList()
        for i in range(len(m["top_mlp"])):
            self.top.extend([p(f"top_mlp.{i}.weight"), p(f"top_mlp.{i}.bias")])
        self.tables = torch.nn.ParameterList([p(f"embedding.t{t}.weight") for t in range(len(m["table_rows"]))])
        self.cross = torch.nn.ParameterList()
        self.cross_names = []
        if self.arch == "dcnv2":
            self.rank = m.get("cross_rank", 0)
            for l in range(m.get("cross_layers", 3)):
                names = ([f"cross_net.W_kernels.{l}", f"cross_net.V_kernels.{l}"] if self.rank > 0
                         else [f"cross_net.kernels.{l}"]) + [f"cross_net.bias.{l}"]
                self.cross.extend([p(n) for n in names])
                self.cross_names.append(names)

    @staticmethod
    def mlp(params, x, relu_last):
        n = len(params) // 2
        for i in range(n):
            x = torch.nn.functional.linear(x, params[2 * i], params[2 * i + 1])
            if i < n - 1 or relu_last:
                x = torch.relu(x)
        return x

    def forward(self, batch):
        x = self.mlp(self.bottom, batch["dense"], relu_last=True)
        pooled = [torch.nn.functional.embedding_bag(ids, w, offsets, mode=self.pooling)
                  for w, (ids, offsets) in zip(self.tables, batch["bags"])]
        feats = torch.stack([x] + pooled, dim=1)  # B x F x D
        if self.arch == "dlrm":
            gram = torch.bmm(feats, feats.transpose(1, 2))
            f = feats.shape[1]
            li, lj = zip(*[(i, j) for i in range(f) for j in range(i + (1 if self.interaction_self else 0))])
            z = torch.cat([x, gram[:, list(li), list(lj)]], dim=1)
        else:
            x0 = feats.reshape(feats.shape[0], -1)
            z = x0
            per = 3 if self.rank > 0 else 2
            for l in range(len(self.cross) // per):
                if self.rank > 0:
                    u, v, b = self.cross[per * l], self.cross[per * l + 1], self.cross[per * l + 2]
                    y = torch.nn.functional.linear(torch.nn.functional.linear(z, v), u, b)
                else:
                    w, b = self.cross[per * l], self.cross[per * l + 1]
                    y = torch.nn.functional.linear(z, w, b)
                z = x0 * y + z
        return self.mlp(self.top, z, relu_last=False).squeeze(1)


def lr_scale(o, step):
    """The MLPerf schedule of src/optim/lr_schedule.h, 0-based step."""
    w, d, n, pw = o.get("warmup_steps", 0), o.get("decay_start", 0), o.get("decay_steps", 0), o.get("decay_power", 2.0)
    if step < w:
        return (step + 1) / w
    if d > 0 and n > 0 and step >= d:
        return max(0.0, (d + n - step) / n) ** pw
    return 1.0


def train_reference(cfg, initial, data, steps, dtype):
    """Trains the PyTorch model from the initial state; returns (losses, final tensors)."""
    batch = cfg["train"]["batch_size"]
    model = Reference(cfg, initial, dtype)
    o = cfg.get("optim", {})
    lr, sparse_lr, eps = o.get("lr", 0.005), o.get("sparse_lr", o.get("lr", 0.005)), o.get("eps", 1e-8)
    dense_params = list(model.bottom) + list(model.cross) + list(model.top)
    dense_kind, sparse_kind = o.get("dense", "adagrad"), o.get("sparse", "rowwise_adagrad")
    if dense_kind == "adagrad":
        dense_opt = torch.optim.Adagrad(dense_params, lr=lr, eps=eps, foreach=False,
                                        initial_accumulator_value=o.get("adagrad_initial_accumulator", 0.0))
    elif dense_kind == "adam":
        dense_opt = torch.optim.Adam(dense_params, lr=lr, betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)), eps=eps,
                                     foreach=False)
    else:
        dense_opt = torch.optim.SGD(dense_params, lr=lr, foreach=False)
    if sparse_kind == "adagrad":
        sparse_opt = torch.optim.Adagrad(list(model.tables), lr=sparse_lr, eps=eps, foreach=False,
                                         initial_accumulator_value=o.get("adagrad_initial_accumulator", 0.0))
    elif sparse_kind == "sgd":
        sparse_opt = torch.optim.SGD(list(model.tables), lr=sparse_lr, foreach=False)
    else:  # row-wise Adagrad (FBGEMM EXACT_ROWWISE_ADAGRAD): one accumulator per row
        sparse_opt = None
        row_acc = [torch.full((w.shape[0],), o.get("adagrad_initial_accumulator", 0.0), dtype=dtype) for w in model.tables]

    torch_losses = []
    for step in range(steps):
        b = batch_slices(data, step * batch, batch, dtype)
        scale = lr_scale(o, step)
        for g in dense_opt.param_groups:
            g["lr"] = lr * scale
        if sparse_opt:
            for g in sparse_opt.param_groups:
                g["lr"] = sparse_lr * scale
        dense_opt.zero_grad()
        for w in model.tables:
            w.grad = None
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(b), b["labels"])
        loss.backward()
        torch_losses.append(loss.item())
        dense_opt.step()
        if sparse_opt:
            sparse_opt.step()
        else:
            with torch.no_grad():
                for t, w in enumerate(model.tables):
                    rows = torch.unique(b["bags"][t][0])
                    g = w.grad[rows]
                    row_acc[t][rows] += (g * g).mean(dim=1)
                    w[rows] -= (sparse_lr * scale / (row_acc[t][rows].sqrt() + eps)).unsqueeze(1) * g

    # The final tensors, under the names hetrec gives them.
    ref = {}
    names = ([f"bottom_mlp.{i}.{k}" for i in range(len(model.bottom) // 2) for k in ("weight", "bias")] +
             [n for layer in model.cross_names for n in layer] +
             [f"top_mlp.{i}.{k}" for i in range(len(model.top) // 2) for k in ("weight", "bias")])
    for name, prm in zip(names, dense_params):
        ref[name] = prm.detach().numpy()
        st = dense_opt.state.get(prm, {})
        if "sum" in st:
            ref[name + ".sum"] = st["sum"].numpy()
        if "exp_avg" in st:
            ref[name + ".exp_avg"] = st["exp_avg"].numpy()
            ref[name + ".exp_avg_sq"] = st["exp_avg_sq"].numpy()
    for t, w in enumerate(model.tables):
        ref[f"embedding.t{t}.weight"] = w.detach().numpy()
        if sparse_opt is None:
            ref[f"embedding.t{t}.accumulator"] = row_acc[t].numpy()
        elif sparse_kind == "adagrad":
            ref[f"embedding.t{t}.accumulator"] = sparse_opt.state[w]["sum"].numpy()
    return torch_losses, ref


def relative_diffs(a, b):
    """Per tensor ||a - b|| / ||b|| (in float64) over the tensors of b."""
    out = {}
    for name, r in b.items():
        h = a[name].astype(np.float64).reshape(r.shape)
        r = r.astype(np.float64)
        out[name] = float(np.linalg.norm(h - r) / max(np.linalg.norm(r), 1e-30))
    return out


def run_config(hetrec, config_path, steps, workdir):
    with open(config_path, "rb") as f:
        cfg = tomllib.load(f)
    batch = cfg["train"]["batch_size"]
    samples = steps * batch
    data_file = os.path.join(workdir, "train.hbin")
    ckpt_dir = os.path.join(workdir, "ckpt")
    metrics = os.path.join(workdir, "metrics.jsonl")
    subprocess.run([hetrec, "data", "synth", "--config", config_path, "--samples", str(samples), "--output", data_file],
                   check=True, stdout=subprocess.DEVNULL)
    train_cmd = [hetrec, "train", "--config", config_path, "--set", "data.format=binary",
                 "--set", f"data.train_path='{data_file}'", "--set", f"train.steps={steps}",
                 "--set", "train.log_every=1", "--set", f"train.checkpoint_dir='{ckpt_dir}'",
                 "--set", "train.checkpoint_at_start=true", "--set", "train.keep_checkpoints=10",
                 "--set", f"train.metrics_path='{metrics}'", "--set", "train.progress=off",
                 "--set", "train.log_level=error", "--set", "train.threads=1"]
    subprocess.run(train_cmd, check=True, stdout=subprocess.DEVNULL)
    hetrec_losses = [r["last_loss"] for r in map(json.loads, open(metrics)) if r["type"] == "train"]
    _, initial = read_checkpoint(os.path.join(ckpt_dir, "ckpt-%012d.hck" % 0))
    _, final = read_checkpoint(os.path.join(ckpt_dir, "ckpt-%012d.hck" % steps))

    data = read_binary_data(data_file)
    torch_losses, ref = train_reference(cfg, initial, data, steps, torch.float32)
    f64_losses, ref64 = train_reference(cfg, initial, data, steps, torch.float64)
    missing = sorted(set(final) - set(ref) - {"step"})
    if missing:
        raise SystemExit(f"{config_path}: hetrec state without a reference: {missing}")
    param_rel = relative_diffs(final, ref)
    loss_rel = [abs(a - b) / abs(b) for a, b in zip(hetrec_losses, torch_losses)]
    # The conditioning of the run: how far PyTorch fp32 drifts from PyTorch fp64 on the
    # same data. Adagrad with a zero initial accumulator turns rounding-level gradients
    # into full-size steps, so two correct fp32 implementations part ways at this rate.
    fp32_vs_fp64_param = relative_diffs(ref, ref64)
    fp32_vs_fp64_loss = [abs(a - b) / abs(b) for a, b in zip(torch_losses, f64_losses)]
    if len(hetrec_losses) != steps:
        raise SystemExit(f"{config_path}: hetrec logged {len(hetrec_losses)} losses, expected {steps}")
    worst = max(param_rel, key=param_rel.get)
    return {
        "config": os.path.relpath(config_path, ROOT),
        "batch": batch,
        "steps": steps,
        "loss_first": torch_losses[0],
        "loss_last": torch_losses[-1],
        "max_loss_rel_diff": max(loss_rel),
        "max_param_rel_diff": param_rel[worst],
        "worst_tensor": worst,
        "tensors_compared": len(param_rel),
        "torch_fp32_vs_fp64_max_loss_rel_diff": max(fp32_vs_fp64_loss),
        "torch_fp32_vs_fp64_max_param_rel_diff": max(fp32_vs_fp64_param.values()),
        "param_rel_diffs": param_rel,
        "torch_fp32_vs_fp64_param_rel_diffs": fp32_vs_fp64_param,
        "hetrec_losses": hetrec_losses,
        "torch_losses": torch_losses,
    }


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("HETREC_COMMIT", "unknown")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetrec", required=True, help="path to the hetrec program")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--tolerance", type=float, default=1e-5, help="relative tolerance for losses and parameters")
    ap.add_argument("--json", help="write the results file here")
    ap.add_argument("configs", nargs="*", default=DEFAULT_CONFIGS)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    runs = []
    for c in args.configs:
        with tempfile.TemporaryDirectory() as work:
            r = run_config(os.path.abspath(args.hetrec), os.path.abspath(c), args.steps, work)
        runs.append(r)
        ok = r["max_loss_rel_diff"] <= args.tolerance and r["max_param_rel_diff"] <= args.tolerance
        print(f"{r['config']}: {args.steps} steps, loss {r['loss_first']:.5f} -> {r['loss_last']:.5f}; "
              f"max loss rel diff {r['max_loss_rel_diff']:.2e}, max param rel diff {r['max_param_rel_diff']:.2e} "
              f"({r['worst_tensor']}, {r['tensors_compared']} tensors) {'OK' if ok else 'FAIL'}; "
              f"torch fp32 vs fp64: loss {r['torch_fp32_vs_fp64_max_loss_rel_diff']:.2e}, "
              f"param {r['torch_fp32_vs_fp64_max_param_rel_diff']:.2e}")
    metrics = {
        "steps": args.steps,
        "max_loss_rel_diff": max(r["max_loss_rel_diff"] for r in runs),
        "max_param_rel_diff": max(r["max_param_rel_diff"] for r in runs),
        "tolerance": args.tolerance,
        "param_metric": "per tensor ||hetrec - torch||_2 / ||torch||_2, max over tensors (weights and optimizer slots)",
        "torch_version": torch.__version__,
        "runs": runs,
    }
    result = {
        "benchmark": "torch-parity",
        "date": datetime.date.today().isoformat(),
        "gpu": "cpu",
        "commit": git_commit(),
        "command": "tools/torch_parity.py --hetrec " + args.hetrec + " --steps " + str(args.steps),
        "metrics": metrics,
    }
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    passed = metrics["max_loss_rel_diff"] <= args.tolerance and metrics["max_param_rel_diff"] <= args.tolerance
    print("parity", "PASSED" if passed else "FAILED", f"(tolerance {args.tolerance:g})")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
