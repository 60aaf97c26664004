#!/usr/bin/env python3
"""The PyTorch baselines of the end-to-end benchmark: the same DLRM / DLRM-DCNv2 as a
hetrec config file, nn.Linear layers, bf16 autocast, dense Adagrad, row-wise Adagrad on
the tables, timed on the GPU in three modes:
  eager    one nn.EmbeddingBag per table with sparse gradients (the way a PyTorch user
           writes it first: the `naive` baseline), eager;
  compile  the same with the dense part under torch.compile;
  fused    what a PyTorch performance engineer writes: every table in one embedding
           weight with per-table row offsets (as FBGEMM's table-batched embedding does),
           so the lookup is one embedding_bag call and the sparse row-wise Adagrad update
           one coalesce and two index_add calls over all tables; the dense part (bottom
           MLP, interaction, top MLP) under torch.compile.
The headline comparison uses the fastest of them.

Batches mirror bench/e2e_bench.cpp: ids skewed as floor(rows * u^3), bags of the table's
multi-hot size, pre-generated on the device and rotated (so input copies are not timed:
an advantage for PyTorch). Prints one JSON object with samples/s per mode.

Usage: tools/torch_dlrm_bench.py --config configs/dlrm_dcnv2_capped.toml --batch 65536
                                 [--steps 20] [--warmup 5] [--modes eager,compile,fused]
"""
import argparse
import json
import math
import statistics
import sys
import time
import tomllib

import torch

ROTATE = 4  # distinct batches cycled through


class DlrmModel(torch.nn.Module):
    def __init__(self, m, device):
        super().__init__()
        self.arch = m.get("arch", "dlrm")
        dim = m["embedding_dim"]
        pooling = m.get("pooling", "sum")
        # Built on the device: 40M-row tables would take minutes to initialise on the host.
        self.tables = torch.nn.ModuleList(
            torch.nn.EmbeddingBag(rows, dim, mode=pooling, sparse=True, device=device) for rows in m["table_rows"])
        with torch.no_grad():
            for t in self.tables:
                bound = 1.0 / math.sqrt(t.num_embeddings)
                t.weight.uniform_(-bound, bound)

        def mlp(widths, in_features, relu_last):
            layers = []
            for i, w in enumerate(widths):
                layers.append(torch.nn.Linear(in_features, w))
                if i < len(widths) - 1 or relu_last:
                    layers.append(torch.nn.ReLU())
                in_features = w
            return torch.nn.Sequential(*layers)

        self.bottom = mlp(m["bottom_mlp"], m.get("num_dense", 13), True)
        f = len(m["table_rows"]) + 1
        if self.arch == "dcnv2":
            n = f * dim
            rank = m.get("cross_rank", 0)
            self.cross_v = torch.nn.ModuleList()
            self.cross_u = torch.nn.ModuleList()
            for _ in range(m.get("cross_layers", 3)):
                if rank > 0:
                    self.cross_v.append(torch.nn.Linear(n, rank, bias=False))
                    self.cross_u.append(torch.nn.Linear(rank, n))
                else:
                    self.cross_u.append(torch.nn.Linear(n, n))
            top_in = n
        else:
            self.pairs = torch.tril_indices(f, f, offset=-1)
            top_in = dim + f * (f - 1) // 2
        self.top = mlp(m["top_mlp"], top_in, False)

    def dense_part(self, dense, pooled):
        return self.interact_and_top(self.bottom(dense), torch.stack(pooled, dim=1))

    def fused_dense_part(self, dense, pooled_tbd):
        """pooled_tbd: [tables, batch, dim], the one embedding_bag call's output."""
        return self.interact_and_top(self.bottom(dense), pooled_tbd.transpose(0, 1))

    def interact_and_top(self, x, pooled_btd):
        feats = torch.cat([x.unsqueeze(1), pooled_btd], dim=1)
        if self.arch == "dcnv2":
            x0 = feats.flatten(1)
            z = x0
            for i, u in enumerate(self.cross_u):
                y = u(self.cross_v[i](z)) if len(self.cross_v) else u(z)
                z = x0 * y + z
        else:
            gram = torch.bmm(feats, feats.transpose(1, 2))
            z = torch.cat([x, gram[:, self.pairs[0], self.pairs[1]]], dim=1)
        return self.top(z).squeeze(1)


def make_batches(m, batch, device, seed):
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    hot = m.get("table_hotness", [1] * len(m["table_rows"]))
    out = []
    for _ in range(ROTATE):
        bags = []
        for rows, h in zip(m["table_rows"], hot):
            u = torch.rand(batch * h, generator=g, device=device)
            ids = torch.clamp((rows * u ** 3).long(), max=rows - 1)
            offsets = torch.arange(0, batch * h, h, device=device)
            bags.append((ids, offsets))
        dense = torch.rand(batch, m.get("num_dense", 13), generator=g, device=device) * 5
        labels = (torch.rand(batch, generator=g, device=device) < 0.3).float()
        out.append((dense, bags, labels))
    return out


class FusedTables:
    """Every table in one [sum of rows, dim] weight; table t's rows start at row_offset[t]."""

    def __init__(self, model, device):
        rows = [t.num_embeddings for t in model.tables]
        self.row_offset = torch.tensor([0] + rows[:-1], device=device).cumsum(0)
        with torch.no_grad():
            self.weight = torch.cat([t.weight.detach() for t in model.tables]).requires_grad_(True)
        self.acc = torch.zeros(self.weight.shape[0], device=device)
        # The per-table copies are no longer needed: free them.
        for t in model.tables:
            t.weight = torch.nn.Parameter(torch.empty(0, t.embedding_dim, device=device), requires_grad=False)

    def batch(self, bags, batch):
        """One id vector (ids shifted by their table's offset) and one offset per (table, sample) bag."""
        ids = torch.cat([ids + self.row_offset[t] for t, (ids, _) in enumerate(bags)])
        lengths = torch.cat([torch.diff(off, append=torch.tensor([ids_t.numel()], device=off.device))
                             for ids_t, off in bags])
        offsets = torch.zeros(lengths.numel(), dtype=torch.long, device=ids.device)
        offsets[1:] = lengths.cumsum(0)[:-1]
        return ids, offsets


def rowwise_adagrad_(weight, acc, grad, lr, eps):
    """FBGEMM EXACT_ROWWISE_ADAGRAD on a sparse gradient (duplicates summed first)."""
    grad = grad.coalesce()
    rows, values = grad.indices()[0], grad.values()
    acc.index_add_(0, rows, (values * values).mean(dim=1))
    weight.index_add_(0, rows, -(lr / (acc[rows].sqrt() + eps)).unsqueeze(1) * values)


def run(mode, cfg, batch, steps, warmup):
    m, o = cfg["model"], cfg.get("optim", {})
    lr, sparse_lr, eps = o.get("lr", 0.004), o.get("sparse_lr", o.get("lr", 0.004)), o.get("eps", 1e-8)
    device = torch.device("cuda")
    torch.manual_seed(0)
    model = DlrmModel(m, device).to(device)
    dense_params = [p for n, p in model.named_parameters() if not n.startswith("tables.")]
    dense_opt = torch.optim.Adagrad(dense_params, lr=lr, eps=eps, foreach=True)
    batches = make_batches(m, batch, device, 1)
    tables = len(m["table_rows"])
    if mode == "fused":
        fused = FusedTables(model, device)
        fused_batches = [(dense, fused.batch(bags, batch), labels) for dense, bags, labels in batches]
        dense_fn = torch.compile(model.fused_dense_part)
        pooling = m.get("pooling", "sum")

        def fused_step(i):
            dense, (ids, offsets), labels = fused_batches[i % ROTATE]
            with torch.autocast("cuda", dtype=torch.bfloat16):
                pooled = torch.nn.functional.embedding_bag(ids, fused.weight, offsets, mode=pooling, sparse=True)
                logits = dense_fn(dense, pooled.view(tables, batch, -1))
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), labels)
            dense_opt.zero_grad(set_to_none=True)
            fused.weight.grad = None
            loss.backward()
            dense_opt.step()
            with torch.no_grad():
                rowwise_adagrad_(fused.weight, fused.acc, fused.weight.grad, sparse_lr, eps)
            return loss

        return timed(mode, fused_step, batch, steps, warmup)
    accs = [torch.zeros(t.num_embeddings, device=device) for t in model.tables]
    dense_fn = torch.compile(model.dense_part) if mode == "compile" else model.dense_part

    def step(i):
        dense, bags, labels = batches[i % ROTATE]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pooled = [t(ids, offsets) for t, (ids, offsets) in zip(model.tables, bags)]
            logits = dense_fn(dense, pooled)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), labels)
        dense_opt.zero_grad(set_to_none=True)
        for t in model.tables:
            t.weight.grad = None
        loss.backward()
        dense_opt.step()
        with torch.no_grad():
            for t, acc in zip(model.tables, accs):
                rowwise_adagrad_(t.weight, acc, t.weight.grad, sparse_lr, eps)
        return loss

    return timed(mode, step, batch, steps, warmup)


def timed(mode, step, batch, steps, warmup):
    t0 = time.time()
    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    times = []
    for i in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(warmup + i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    step_ms = statistics.median(times)
    return {"mode": mode, "step_ms": step_ms, "samples_per_s": batch / step_ms * 1e3, "warmup_s": warm_s,
            "peak_memory_gb": torch.cuda.max_memory_allocated() / 1e9}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--modes", default="eager,compile,fused")
    args = ap.parse_args()
    with open(args.config, "rb") as f:
        cfg = tomllib.load(f)
    out = {"config": args.config, "batch": args.batch, "torch_version": torch.__version__,
           "gpu": torch.cuda.get_device_name(0), "results": {}}
    for mode in args.modes.split(","):
        try:
            out["results"][mode] = run(mode, cfg, args.batch, args.steps, args.warmup)
        except torch.cuda.OutOfMemoryError as e:
            out["results"][mode] = {"mode": mode, "error": "out of memory: " + str(e).splitlines()[0]}
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    ok = {k: v for k, v in out["results"].items() if "samples_per_s" in v}
    if ok:
        best = max(ok, key=lambda k: ok[k]["samples_per_s"])
        out["strongest"] = {"mode": best, "samples_per_s": ok[best]["samples_per_s"]}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
