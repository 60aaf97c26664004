#!/usr/bin/env python3
"""Self-test of tools/check_vendor_api.py: on a small tree written here, it must report
exactly the planted vendor-specific uses (file and line), ignore comments, strings and
the shim, honour the allow-list only for the named rule and file, and reject stale or
reasonless allow-list entries."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "check_vendor_api.py")

# Vendor names are assembled from pieces so that this file never spells them itself.
CU, HIP = "cuda", "hip"

KERNEL = f"""#include "gpu/warp.h"
#include <{CU}_runtime.h>
// {CU}Malloc in a comment is fine
const char* text = "{CU}Memcpy in a string is fine";
__global__ void k(float* x) {{
  unsigned m = __ballot_sync(0xFFFFFFFFu, x[0] > 0);
  x[0] = __fmul_rn(x[0], 2.0f);
  {CU}StreamSynchronize(nullptr);
  int lanes = warpSize;
  gpu::shfl_xor(x[0], 1);
  asm volatile("membar.gl;");
}}
#if defined(__CUDACC__)
#endif
#if defined(__CUDACC__) || defined(__HIPCC__)
#endif
"""

# A CPU benchmark's compiler barrier is not vendor code.
CPU_BENCH = """#include <rocksdb_like.h>
void keep(void* p) { asm volatile("" : : "g"(p) : "memory"); }
"""

CALLER = f"""#include <vector>
#include "hip/hip_runtime.h"
void f() {{
  {HIP}Stream_t s; {HIP}Malloc(nullptr, 4);
  auto h = cub::DeviceRadixSort{{}};
  int v = 1'000'000; char c = 'x';
  const char* raw = R"x({HIP}Free(p))x";
}}
"""

GEMM = f"""cublasLtMatmul(h); auto t = {CU.upper()}_R_32F;
{CU}Malloc(nullptr, 4);
"""

SHIM = f"""#include <{CU}_runtime.h>
#define {CU}Malloc {HIP}Malloc
"""

EXPECTED_PLANTED = {
    ("src/kernels/bad.cu", 2, "vendor-header"),
    ("src/kernels/bad.cu", 6, "warp-intrinsic"),
    ("src/kernels/bad.cu", 7, "rounding-intrinsic"),
    ("src/kernels/bad.cu", 8, "cuda-runtime"),
    ("src/kernels/bad.cu", 9, "warp-intrinsic"),
    ("src/kernels/bad.cu", 11, "inline-asm"),
    ("src/kernels/bad.cu", 13, "one-vendor-compiler"),
    ("tests/x/caller.cpp", 2, "vendor-header"),
    ("tests/x/caller.cpp", 4, "hip-runtime"),
    ("tests/x/caller.cpp", 5, "device-library"),
    ("src/gemm/gemm.cpp", 2, "cuda-runtime"),
}


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def run(root, allowlist_text):
    allowlist = os.path.join(root, "allow.txt")
    with open(allowlist, "w", encoding="utf-8") as f:
        f.write(allowlist_text)
    p = subprocess.run([sys.executable, CHECKER, "--root", root, "--allowlist", allowlist],
                       capture_output=True, text=True, check=False)
    return p.returncode, p.stdout, p.stderr


def reported(stdout):
    out = set()
    for line in stdout.splitlines():
        if ": [" not in line:
            continue
        where, rest = line.split(": [", 1)
        path, number = where.rsplit(":", 1)
        out.add((path, int(number), rest.split("]", 1)[0]))
    return out


class CheckVendorApi(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        write(self.root, "src/kernels/bad.cu", KERNEL)
        write(self.root, "tests/x/caller.cpp", CALLER)
        write(self.root, "src/gemm/gemm.cpp", GEMM)
        write(self.root, "bench/keep.cpp", CPU_BENCH)
        write(self.root, "src/gpu/platform.h", SHIM)  # the shim may name the vendor
        write(self.root, "src/core/clean.h", "#pragma once\nint lane_count(int w) { return w; }\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_reports_exactly_the_planted_uses(self):
        rc, out, err = run(self.root, "src/gemm/gemm.cpp blas-lt  # the BLAS-Lt backend\n")
        self.assertEqual(rc, 1, out + err)
        self.assertEqual(reported(out), EXPECTED_PLANTED, out)

    def test_allowlist_is_per_rule_and_per_file(self):
        rc, out, _ = run(self.root, "src/gemm/gemm.cpp blas-lt  # the BLAS-Lt backend\n")
        self.assertNotIn("src/gemm/gemm.cpp:1:", out)  # blas-lt permitted there
        self.assertIn("src/gemm/gemm.cpp:2: [cuda-runtime]", out)  # but not the runtime
        rc, out, _ = run(self.root, "")
        self.assertIn("src/gemm/gemm.cpp:1: [blas-lt]", out)

    def test_clean_tree_passes(self):
        for rel in ("src/kernels/bad.cu", "tests/x/caller.cpp", "src/gemm/gemm.cpp"):
            os.remove(os.path.join(self.root, rel))
        rc, out, err = run(self.root, "")
        self.assertEqual(rc, 0, out + err)

    def test_stale_entry_fails(self):
        os.remove(os.path.join(self.root, "src/gemm/gemm.cpp"))
        rc, out, _ = run(self.root, "src/gemm/gemm.cpp blas-lt  # the BLAS-Lt backend\n")
        self.assertEqual(rc, 1)
        self.assertIn("permits nothing any more", out)

    def test_entry_without_reason_or_with_unknown_rule_is_rejected(self):
        rc, _, err = run(self.root, "src/gemm/gemm.cpp blas-lt\n")
        self.assertEqual(rc, 2)
        self.assertIn("allow.txt:1", err)
        rc, _, err = run(self.root, "src/gemm/gemm.cpp no-such-rule  # why\n")
        self.assertEqual(rc, 2)
        self.assertIn("unknown rule", err)


if __name__ == "__main__":
    unittest.main()
