#!/usr/bin/env python3
"""Self-test of tools/check_namespaces.py: the repository's src/ is clean; in a copy of it, a
file that opens the wrong unit's namespace, an inline namespace opened without `inline`,
and core opening a unit's name are each reported with the file and line; a layer table
with a unit the checker has no namespace for is refused (exit 2)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
CHECKER = os.path.join(REPO, "tools", "check_namespaces.py")


def run(root, table=None):
    args = [sys.executable, CHECKER, "--root", root, "--table", table or os.path.join(REPO, "tools", "layers.txt")]
    p = subprocess.run(args, capture_output=True, text=True, check=False)
    return p.returncode, p.stdout.splitlines(), p.stderr


def append(root, rel, text):
    with open(os.path.join(root, rel), "a", encoding="utf-8") as f:
        f.write(text)


class InRepositoryCopy(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        shutil.copytree(os.path.join(REPO, "src"), os.path.join(self.root, "src"))

    def tearDown(self):
        self.tmp.cleanup()

    def test_repository_is_clean(self):
        self.assertEqual(run(REPO)[:2], (0, []))
        self.assertEqual(run(self.root)[:2], (0, []))

    def test_wrong_unit_namespace_is_reported(self):
        path = "src/plan/search.cpp"
        lines = sum(1 for _ in open(os.path.join(self.root, path), encoding="utf-8"))
        append(self.root, path, "\nnamespace hetrec::inline train {\nvoid planted();\n}\n")
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [f"{path}:{lines + 2}: [namespace] plan opens hetrec::inline train, expected "
                               "hetrec::inline plan (or a namespace nested in it)"])

    def test_inline_namespace_opened_plainly_is_reported(self):
        append(self.root, "src/data/binary_format.cpp", "\nnamespace hetrec::data {\nvoid planted();\n}\n")
        append(self.root, "src/gemm/cublaslt_gemm.cpp", "\nnamespace hetrec::gemm::cublaslt {\nvoid planted();\n}\n")
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1)
        self.assertEqual(len(out), 2, out)
        self.assertIn("src/data/binary_format.cpp", out[0])
        self.assertIn("[namespace] data opens hetrec::data, expected hetrec::inline data", out[0])
        self.assertIn("[namespace] gemm opens hetrec::gemm::cublaslt, expected hetrec::inline gemm::cublaslt "
                      "(inline namespaces are opened inline)", out[1])

    def test_core_may_not_take_a_unit_name_and_units_may_not_use_the_root(self):
        append(self.root, "src/core/tensor.cpp", "\nnamespace hetrec::plan {\nvoid planted();\n}\n")
        append(self.root, "src/kernels/launch.h", "\nnamespace hetrec {\nvoid planted();\n}\n")
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1)
        self.assertEqual(len(out), 2, out)
        self.assertIn("src/core/tensor.cpp", out[0])
        self.assertIn("[namespace] kernels opens hetrec, expected hetrec::kernels", out[1])

    def test_unit_without_a_namespace_is_refused(self):
        table = os.path.join(self.root, "layers.txt")
        with open(os.path.join(REPO, "tools", "layers.txt"), encoding="utf-8") as f:
            text = f.read()
        with open(table, "w", encoding="utf-8") as f:
            f.write(text + "newunit  hetrec_newunit  newunit/  core\n")
        rc, out, err = run(self.root, table)
        self.assertEqual(rc, 2)
        self.assertIn("newunit have no namespace", err)


if __name__ == "__main__":
    unittest.main()
