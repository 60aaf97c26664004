"""Shared setup of the Python module's tests: the built module (PYTHONPATH), the built
program (HETREC_PROGRAM) and the source tree (HETREC_SOURCE), set by CTest."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

SOURCE = pathlib.Path(os.environ["HETREC_SOURCE"])
PROGRAM = os.environ["HETREC_PROGRAM"]
DEMO = SOURCE / "configs" / "demo.toml"


def small_demo(tmp):
    """Overrides that shrink the demo to 32 steps of 512 samples and 4096 evaluation samples,
    with its outputs under `tmp`, on the CPU with a fixed thread count (its runs are bitwise
    reproducible for a given thread count)."""
    return [
        "data.synthetic.train_samples=16384",
        "data.synthetic.eval_samples=4096",
        "train.batch_size=512",
        "train.eval_every=0",
        "train.log_every=8",
        "train.threads=2",
        "train.device=cpu",  # bitwise reproducible runs on any machine
        "train.progress=off",
        "train.log_level=warn",
        f'train.metrics_path="{tmp}/metrics.jsonl"',
        f'train.checkpoint_dir="{tmp}/checkpoints"',
    ]


def run_program(*args, check=True):
    """Runs the hetrec program; returns the completed process (text output)."""
    result = subprocess.run([PROGRAM, *map(str, args)], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"hetrec {' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr}")
    return result


def demo_arrays(batch, rng, hotness=(1, 2, 1, 3, 1, 1, 1, 2), rows=(300, 1000, 2000, 5000, 3000, 200, 50, 1000)):
    """A batch for the demo model: dense float32 [B, 13], one int64 [B, H_t] array per table
    (the demo's hotness), float32 labels."""
    dense = rng.standard_normal((batch, 13)).astype(np.float32)
    sparse = [rng.integers(0, r, size=(batch, h)) for r, h in zip(rows, hotness)]
    labels = (rng.random(batch) < 0.3).astype(np.float32)
    return dense, sparse, labels


@pytest.fixture
def rng():
    return np.random.default_rng(2026)
