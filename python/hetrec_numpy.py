#!/usr/bin/env python3
"""The forward pass of a model `hetrec export` wrote, in NumPy (docs/export.md).

Reads the safetensors file and its JSON description, runs the network on a batch that
`hetrec predict` wrote (its dense features and bags, hetrec's logits and predictions) and
compares the predictions. Needs only NumPy; the safetensors format is read directly.

    python3 python/hetrec_numpy.py --model model.safetensors --batch batch.safetensors

prints a JSON object (samples, max_rel_diff of the predictions, max_abs_diff of the
logits, ...) and exits 1 when max_rel_diff exceeds --tolerance (default 1e-6), 2 on
unreadable input.

The forward pass, as hetrec's CPU engine computes it (src/model/dlrm.cpp, src/nn/):
  bottom MLP: Linear (y = x W^T + b) and ReLU after every layer  -> x0 (B x D)
  tables: pooled[b, t] = sum (or mean) of the rows of bag (t, b); an empty bag pools to 0
  dlrm:  [x0, dots of every pair (i, j), j < i (j <= i with interaction_self) of the
          features (x0, table 0, ..., table T-1), pairs in row-major lower-triangle order]
  dcnv2: x = [x0, pooled tables 0..T-1] (B x (T+1) D); cross layers
          x_{l+1} = x * (x_l W_l^T + b_l) + x_l, with W_l = U_l V_l when low rank
  top MLP: ReLU after every layer but the last; its one output is the logit,
  prediction = sigmoid(logit).
The parameters are stored in fp32 (tables also in fp16 or bf16); the pass here runs in
float64 (--dtype float32 for fp32), so the difference is hetrec's own rounding.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

DESCRIPTION_FORMAT = "hetrec-model"
DESCRIPTION_VERSION = 1
METADATA_DESCRIPTION_KEY = "hetrec_model"
DEFAULT_TOLERANCE = 1e-6  # relative, on the predictions (the project's export round trip)

_NUMPY_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
_HEADER_LIMIT = 100 << 20  # bytes; the safetensors library's own bound on a header


def read_safetensors(path):
    """Returns ({name: ndarray}, metadata) of a safetensors file. BF16 tensors come back
    as float32 (exact: a bf16 value is the top half of an fp32)."""
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
    tensors = {}
    for name, entry in header.items():
        dtype = entry["dtype"]
        shape = tuple(int(d) for d in entry["shape"])
        begin, end = (int(x) for x in entry["data_offsets"])
        if not 0 <= begin <= end or base + end > len(data):
            raise ValueError(f"{path}: tensor '{name}': data_offsets [{begin}, {end}) outside the file")
        raw = data[base + begin:base + end]
        if dtype == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        elif dtype in _NUMPY_DTYPES:
            array = np.frombuffer(raw, dtype=np.dtype(_NUMPY_DTYPES[dtype]).newbyteorder("<"))
        else:
            raise ValueError(f"{path}: tensor '{name}': dtype {dtype} is not read here")
        count = int(np.prod(shape)) if shape else 1
        if array.size != count:
            raise ValueError(f"{path}: tensor '{name}': {array.size} elements for shape {list(shape)}")
        tensors[name] = array.reshape(shape)
    return tensors, metadata


def description_path(safetensors_path):
    stem, _ = os.path.splitext(safetensors_path)
    return stem + ".json"


def load_model(path, description=None):
    """Returns (description dict, {parameter name: ndarray}) of an export."""
    tensors, metadata = read_safetensors(path)
    if description is None:
        json_path = description_path(path)
        if os.path.exists(json_path):
            with open(json_path, encoding="utf-8") as f:
                description = json.load(f)
        elif METADATA_DESCRIPTION_KEY in metadata:
            description = json.loads(metadata[METADATA_DESCRIPTION_KEY])
        else:
            raise ValueError(f"{path}: no description ({json_path} is missing and the file's metadata has none)")
    if description.get("format") != DESCRIPTION_FORMAT or description.get("version") != DESCRIPTION_VERSION:
        raise ValueError(f"{path}: description format {description.get('format')!r} version "
                         f"{description.get('version')!r}, expected {DESCRIPTION_FORMAT!r} {DESCRIPTION_VERSION}")
    for p in description["parameters"]:
        t = tensors.get(p["name"])
        if t is None:
            raise ValueError(f"{path}: parameter '{p['name']}' of the description is missing")
        if list(t.shape) != list(p["shape"]):
            raise ValueError(f"{path}: parameter '{p['name']}' has shape {list(t.shape)}, "
                             f"the description says {p['shape']}")
    return description, tensors


def _mlp(x, params, prefix, layers, relu_last, dtype):
    for i in range(layers):
        w = params[f"{prefix}.{i}.weight"].astype(dtype)
        b = params[f"{prefix}.{i}.bias"].astype(dtype)
        x = x @ w.T + b
        if i < layers - 1 or relu_last:
            x = np.maximum(x, 0)
    return x


def _pool(params, desc, offsets, ids, batch, dtype):
    """pooled: batch x tables x dim from the table-major CSR bags of data/batch.h."""
    tables = desc["tables"]
    dim = desc["embedding_dim"]
    pooled = np.zeros((batch, len(tables), dim), dtype=dtype)
    offsets = offsets.astype(np.int64)
    for t, table in enumerate(tables):
        weight = params[f"embedding.{table['name']}.weight"]
        bag = offsets[t * batch:(t + 1) * batch + 1]
        counts = np.diff(bag)
        table_ids = ids[bag[0]:bag[-1]].astype(np.int64)
        if table_ids.size and (table_ids.min() < 0 or table_ids.max() >= table["rows"]):
            raise ValueError(f"table '{table['name']}': an id is outside [0, {table['rows']})")
        samples = np.repeat(np.arange(batch), counts)
        sums = np.zeros((batch, dim), dtype=dtype)
        np.add.at(sums, samples, weight[table_ids].astype(dtype))
        if table["pooling"] == "mean":
            sums /= np.maximum(counts, 1).astype(dtype)[:, None]
        pooled[:, t, :] = sums
    return pooled


def forward(desc, params, dense, offsets, ids, dtype=np.float64):
    """The logits (one per sample) of the exported network on one batch."""
    batch = dense.shape[0]
    x0 = _mlp(dense.astype(dtype), params, "bottom_mlp", len(desc["bottom_mlp"]), True, dtype)
    pooled = _pool(params, desc, offsets, ids, batch, dtype)
    if desc["arch"] == "dlrm":
        features = np.concatenate([x0[:, None, :], pooled], axis=1)  # B x F x D
        f = features.shape[1]
        li, lj = np.tril_indices(f, 0 if desc["interaction_self"] else -1)
        dots = np.einsum("bid,bjd->bij", features, features)[:, li, lj]
        top_in = np.concatenate([x0, dots], axis=1)
    elif desc["arch"] == "dcnv2":
        x = np.concatenate([x0, pooled.reshape(batch, -1)], axis=1)
        xl = x
        for layer in range(desc["cross_layers"]):
            b = params[f"cross_net.bias.{layer}"].astype(dtype)
            if desc["cross_rank"] > 0:
                u = params[f"cross_net.W_kernels.{layer}"].astype(dtype)
                v = params[f"cross_net.V_kernels.{layer}"].astype(dtype)
                z = (xl @ v.T) @ u.T + b
            else:
                w = params[f"cross_net.kernels.{layer}"].astype(dtype)
                z = xl @ w.T + b
            xl = x * z + xl
        top_in = xl
    else:
        raise ValueError(f"unknown arch {desc['arch']!r}")
    return _mlp(top_in, params, "top_mlp", len(desc["top_mlp"]), False, dtype)[:, 0]


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def compare(model_path, batch_path, dtype=np.float64):
    desc, params = load_model(model_path)
    batch, _ = read_safetensors(batch_path)
    logits = forward(desc, params, batch["dense"], batch["offsets"], batch["ids"], dtype)
    predictions = sigmoid(logits)
    ref_p = batch["predictions"].astype(np.float64)
    ref_z = batch["logits"].astype(np.float64)
    rel = np.abs(predictions - ref_p) / np.maximum(np.abs(ref_p), np.finfo(np.float64).tiny)
    return {
        "samples": int(logits.shape[0]),
        "arch": desc["arch"],
        "dtype": np.dtype(dtype).name,
        "max_rel_diff": float(rel.max()),
        "mean_rel_diff": float(rel.mean()),
        "max_abs_diff": float(np.abs(predictions - ref_p).max()),
        "max_abs_logit_diff": float(np.abs(logits - ref_z).max()),
        "max_abs_logit": float(np.abs(ref_z).max()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="<name>.safetensors from `hetrec export`")
    parser.add_argument("--batch", required=True, help="safetensors from `hetrec predict`")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="largest relative difference of a prediction accepted")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = parser.parse_args(argv)
    try:
        result = compare(args.model, args.batch, np.dtype(args.dtype).type)
    except (OSError, ValueError, KeyError) as e:
        print(f"hetrec_numpy: {e}", file=sys.stderr)
        return 2
    result["tolerance"] = args.tolerance
    result["pass"] = result["max_rel_diff"] <= args.tolerance
    print(json.dumps(result))
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
