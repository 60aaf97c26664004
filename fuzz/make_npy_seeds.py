#!/usr/bin/env python3
"""Writes the seeds of fuzz/corpus/npy_npz/ with NumPy's own writers (numpy.save,
numpy.lib.format.write_array, numpy.savez, numpy.savez_compressed): .npy files of each
header version and several types, and .npz archives of stored and deflated members in the
MLPerf multi-hot layout. Each seed starts with the target's mode byte (harness/npy_npz.cpp:
bit 0 archive, bits 1-2 rows per read, bit 3 backwards).

    fuzz/make_npy_seeds.py fuzz/corpus/npy_npz
"""
import io
import os
import sys

import numpy as np


def npy(array, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, array)
    else:
        np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


def npz(compressed, **arrays):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus/npy_npz"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261202)
    # The multi-hot layout: one member per table, named by its index, each (samples, hotness).
    sparse = {str(t): rng.integers(0, 1000, size=(6, h), dtype=np.int32) for t, h in enumerate([1, 3, 2])}
    seeds = {
        "dense_f32_v1": (0b0000, npy(rng.standard_normal((5, 13)).astype(np.float32))),
        "labels_i32_v1": (0b0010, npy(rng.integers(0, 2, size=(7,), dtype=np.int32))),
        "ids_i64_v2": (0b0100, npy(rng.integers(0, 1 << 40, size=(4, 3), dtype=np.int64), version=(2, 0))),
        "bool_v3": (0b1010, npy(np.array([[True, False], [False, True]]), version=(3, 0))),
        "scalar_u1": (0b0000, npy(np.uint8(7))),
        "empty_f8": (0b0110, npy(np.zeros((0, 4), dtype=np.float64))),
        "sparse_stored": (0b0011, npz(False, **sparse)),
        "sparse_deflated": (0b0011, npz(True, **sparse)),
        "sparse_deflated_backwards": (0b1001, npz(True, **sparse)),
        "mixed_deflated": (0b0101, npz(True, a=np.arange(300, dtype=np.int16).reshape(100, 3), b=np.float32(1.5))),
    }
    for name, (mode, data) in seeds.items():
        path = os.path.join(out, name)
        with open(path, "wb") as f:
            f.write(bytes([mode]) + data)
        print("%s (%d bytes)" % (path, len(data) + 1))


if __name__ == "__main__":
    main()
