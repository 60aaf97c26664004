"""A PyTorch module built from a model `hetrec export` wrote (docs/export.md).

    import hetrec_torch
    model = hetrec_torch.load("model.safetensors")           # reads model.json beside it
    logits = model(dense, offsets, ids)                         # hetrec's batch layout
    probabilities = torch.sigmoid(logits)

The module's parameter names are the export's (bottom_mlp.<i>.weight, embedding.<table>.
weight, cross_net.kernels.<l>, ...), so `model.state_dict()` and the safetensors file
name the same tensors. Tables stored in fp16 or bf16 are widened to fp32 parameters
(exactly: every 16-bit value is an fp32 value), as hetrec widens each row it pools.

forward(dense, offsets, ids) takes hetrec's batch layout (src/data/batch.h): dense is
B x num_dense, and the bags of every table are one CSR structure ordered table-major,
bag (t, b) = ids[offsets[t*B + b] : offsets[t*B + b + 1]], offsets of T*B + 1 entries.
forward_bags(dense, bags) takes one (ids, per-sample start offsets) pair per table, the
torch.nn.EmbeddingBag convention.

The network (hetrec's CPU engine, src/model/dlrm.cpp and src/nn/):
  bottom MLP with ReLU after every layer -> x0; pooled tables (sum or mean; empty bag 0);
  dlrm:  [x0, dot products of the feature pairs (i, j), j < i, or j <= i with
          interaction_self, features (x0, tables...), row-major lower-triangle order];
  dcnv2: x = [x0, tables...], x_{l+1} = x * (x_l W_l^T + b_l) + x_l (W_l = U_l V_l when
          low rank, cross_rank > 0);
  top MLP with ReLU after every layer but the last; the output is the logit.

Needs only torch; the safetensors format is read directly (no safetensors package).
"""
import json
import os
import struct

import torch
from torch import nn
import torch.nn.functional as F

DESCRIPTION_FORMAT = "hetrec-model"
DESCRIPTION_VERSION = 1
METADATA_DESCRIPTION_KEY = "hetrec_model"
_HEADER_LIMIT = 100 << 20  # bytes; the safetensors library's own bound on a header

_TORCH_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def read_safetensors(path):
    """Returns ({name: tensor on the CPU}, metadata) of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: {len(data)} bytes, too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > _HEADER_LIMIT or 8 + header_len > len(data):
        raise ValueError(f"{path}: header length {header_len} does not fit the file ({len(data)} bytes)")
    header = json.loads(data[8:8 + header_len].decode("utf-8"))
    base = 8 + header_len
    metadata = header.pop("__metadata__", {}) or {}
    buffer = bytearray(data)
    tensors = {}
    for name, entry in header.items():
        dtype = _TORCH_DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor '{name}': dtype {entry['dtype']} is not read here")
        shape = [int(d) for d in entry["shape"]]
        begin, end = (int(x) for x in entry["data_offsets"])
        if not 0 <= begin <= end or base + end > len(data):
            raise ValueError(f"{path}: tensor '{name}': data_offsets [{begin}, {end}) outside the file")
        if end == begin:
            tensors[name] = torch.empty(shape, dtype=dtype)
            continue
        itemsize = torch.empty(0, dtype=dtype).element_size()
        flat = torch.frombuffer(buffer, dtype=dtype, count=(end - begin) // itemsize, offset=base + begin)
        tensors[name] = flat.reshape(shape).clone()
    return tensors, metadata


def read_description(path):
    """The JSON description of an export: <stem>.json beside it, else the file's metadata."""
    json_path = os.path.splitext(path)[0] + ".json"
    if os.path.exists(json_path):
        with open(json_path, encoding="utf-8") as f:
            desc = json.load(f)
    else:
        _, metadata = read_safetensors(path)
        if METADATA_DESCRIPTION_KEY not in metadata:
            raise ValueError(f"{path}: no description ({json_path} is missing and the file's metadata has none)")
        desc = json.loads(metadata[METADATA_DESCRIPTION_KEY])
    if desc.get("format") != DESCRIPTION_FORMAT or desc.get("version") != DESCRIPTION_VERSION:
        raise ValueError(f"{path}: description format {desc.get('format')!r} version {desc.get('version')!r}, "
                         f"expected {DESCRIPTION_FORMAT!r} {DESCRIPTION_VERSION}")
    return desc


class CrossNet(nn.Module):
    """DCNv2 cross layers x_{l+1} = x0 * (W_l x_l + b_l) + x_l; full rank ("kernels.l",
    n x n) or low rank W_l = U_l V_l ("W_kernels.l": n x r, "V_kernels.l": r x n)."""

    def __init__(self, width, layers, rank):
        super().__init__()
        self.rank = rank
        if rank > 0:
            self.W_kernels = nn.ParameterList([nn.Parameter(torch.zeros(width, rank)) for _ in range(layers)])
            self.V_kernels = nn.ParameterList([nn.Parameter(torch.zeros(rank, width)) for _ in range(layers)])
        else:
            self.kernels = nn.ParameterList([nn.Parameter(torch.zeros(width, width)) for _ in range(layers)])
        self.bias = nn.ParameterList([nn.Parameter(torch.zeros(width)) for _ in range(layers)])

    def forward(self, x0):
        xl = x0
        for layer, b in enumerate(self.bias):
            if self.rank > 0:
                z = F.linear(F.linear(xl, self.V_kernels[layer]), self.W_kernels[layer], b)
            else:
                z = F.linear(xl, self.kernels[layer], b)
            xl = x0 * z + xl
        return xl


class HetrecModel(nn.Module):
    """DLRM (dot interaction) or DLRM-DCNv2 (cross net) as the description says."""

    def __init__(self, desc):
        super().__init__()
        self.desc = desc
        self.arch = desc["arch"]
        if self.arch not in ("dlrm", "dcnv2"):
            raise ValueError(f"unknown arch {self.arch!r}")
        dim = desc["embedding_dim"]
        num_tables = len(desc["tables"])
        self.bottom_mlp = self._mlp(desc["num_dense"], desc["bottom_mlp"])
        self.embedding = nn.ModuleDict()
        for t in desc["tables"]:
            if "." in t["name"]:
                raise ValueError(f"table name {t['name']!r}: a module name may not hold '.'")
            self.embedding[t["name"]] = nn.EmbeddingBag(t["rows"], dim, mode=t["pooling"])
        features = num_tables + 1
        if self.arch == "dlrm":
            li, lj = torch.tril_indices(features, features, 0 if desc["interaction_self"] else -1)
            self.register_buffer("pair_i", li, persistent=False)
            self.register_buffer("pair_j", lj, persistent=False)
            top_in = dim + li.numel()
        else:
            top_in = features * dim
            if desc["cross_layers"] > 0:
                self.cross_net = CrossNet(top_in, desc["cross_layers"], desc["cross_rank"])
        self.top_mlp = self._mlp(top_in, desc["top_mlp"])

    @staticmethod
    def _mlp(width, widths):
        layers = nn.ModuleList()
        for w in widths:
            layers.append(nn.Linear(width, w))
            width = w
        return layers

    @staticmethod
    def _run_mlp(layers, x, relu_last):
        for i, layer in enumerate(layers):
            x = layer(x)
            if i < len(layers) - 1 or relu_last:
                x = torch.relu(x)
        return x

    def forward_bags(self, dense, bags):
        """bags: one (ids, offsets) pair per table in description order, offsets the start
        of each sample's bag (torch.nn.EmbeddingBag). Returns the logits (B)."""
        x0 = self._run_mlp(self.bottom_mlp, dense, True)
        pooled = [self.embedding[t["name"]](ids, offsets) for t, (ids, offsets) in zip(self.desc["tables"], bags)]
        if self.arch == "dlrm":
            features = torch.stack([x0] + pooled, dim=1)  # B x F x D
            dots = torch.bmm(features, features.transpose(1, 2))[:, self.pair_i, self.pair_j]
            top_in = torch.cat([x0, dots], dim=1)
        else:
            top_in = torch.cat([x0] + pooled, dim=1)
            if hasattr(self, "cross_net"):
                top_in = self.cross_net(top_in)
        return self._run_mlp(self.top_mlp, top_in, False)[:, 0]

    def forward(self, dense, offsets, ids):
        """hetrec's batch layout: table-major CSR bags (offsets of T*B + 1 entries)."""
        batch = dense.shape[0]
        offsets = offsets.long()
        ids = ids.long()
        bags = []
        for t in range(len(self.desc["tables"])):
            starts = offsets[t * batch:(t + 1) * batch]
            first, last = offsets[t * batch], offsets[(t + 1) * batch]
            bags.append((ids[first:last], starts - first))
        return self.forward_bags(dense, bags)


def load(path, device="cpu", dtype=torch.float32):
    """The module of an export with its parameters loaded (strictly: every name and shape)."""
    desc = read_description(path)
    tensors, _ = read_safetensors(path)
    model = HetrecModel(desc).to(dtype)
    expected = set(model.state_dict())
    if set(tensors) != expected:
        missing, extra = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
        raise ValueError(f"{path}: tensors missing {missing}, not in the model {extra}")
    state = {name: tensors[name].to(dtype) for name in expected}
    model.load_state_dict(state, strict=True)
    return model.to(device)


def load_batch(path, device="cpu"):
    """The batch `hetrec predict` wrote: {dense, offsets, ids, labels, logits, predictions}."""
    tensors, _ = read_safetensors(path)
    return {name: t.to(device) for name, t in tensors.items()}
