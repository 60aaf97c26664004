#!/usr/bin/env python3
"""Self-test of tools/check_layers.py: in a temporary copy of the repository's src/ and
layer table, an include planted up the order is reported with its file, line and both
units (and nothing else changes); on a small tree written here, a missing CMake link, an
upward link and a sideways include are reported, and a bad table is refused."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
CHECKER = os.path.join(REPO, "tools", "check_layers.py")


def run(root, table=None):
    cmd = [sys.executable, CHECKER, "--root", root]
    if table:
        cmd += ["--table", table]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return p.returncode, p.stdout.splitlines(), p.stderr


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def append(root, rel, text):
    with open(os.path.join(root, rel), "a", encoding="utf-8") as f:
        f.write(text)


def line_count(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return sum(1 for _ in f)


class PlantedInRepositoryCopy(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        shutil.copytree(os.path.join(REPO, "src"), os.path.join(self.root, "src"))
        os.makedirs(os.path.join(self.root, "tools"))
        shutil.copy(os.path.join(REPO, "tools", "layers.txt"), os.path.join(self.root, "tools", "layers.txt"))
        self.rc, self.baseline, _ = run(self.root)

    def tearDown(self):
        self.tmp.cleanup()

    def plant(self, rel, header):
        line = line_count(self.root, "src/" + rel) + 1
        append(self.root, "src/" + rel, f'#include "{header}"\n')
        rc, out, err = run(self.root)
        self.assertEqual(rc, 1, "\n".join(out) + err)
        new = [o for o in out if o not in self.baseline]
        self.assertEqual(len(new), 1, "\n".join(out))
        self.assertTrue(new[0].startswith(f"src/{rel}:{line}: "), new[0])
        return new[0]

    def test_upward_include_names_file_line_and_both_layers(self):
        report = self.plant("core/tensor.h", "train/trainer.h")
        self.assertIn("[upward-include] core includes train/trainer.h of train, above it", report)

    def test_tuner_reaching_into_device_kernels_is_upward(self):
        report = self.plant("tune/winners.cpp", "kernels/launch.h")
        self.assertIn("[unrelated-include] tune includes kernels/launch.h of kernels", report)

    def test_planner_reaching_the_gpu_model_beyond_its_geometry(self):
        report = self.plant("plan/step_model.cpp", "model/gpu/gpu_dlrm.h")
        self.assertIn("plan includes model/gpu/gpu_dlrm.h of model_gpu", report)

    def test_removing_a_cmake_link_is_reported(self):
        path = os.path.join(self.root, "src", "tune", "CMakeLists.txt")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("hetrec_data ", text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace("hetrec_data ", "", 1))
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1)
        self.assertTrue(any("[missing-link] tune includes data/" in o and "hetrec_tune does not link hetrec_data" in o
                            for o in out), "\n".join(out))


TABLE = """# unit target files below
core  hetrec_core  core/  -
data  hetrec_data  data/  core
geo   hetrec_geo   nn/*_geometry.h  core
nn    hetrec_nn    nn/    data geo core
opt   hetrec_opt   opt/   core
"""


class SmallTree(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        write(self.root, "tools/layers.txt", TABLE)
        write(self.root, "src/core/a.h", "#pragma once\n// #include \"nn/x.h\" in a comment\n")
        write(self.root, "src/data/b.h", '#pragma once\n#include "core/a.h"\n#include <vector>\n#include "local.h"\n')
        write(self.root, "src/nn/x.h", '#pragma once\n#include "data/b.h"\n#include "nn/tile_geometry.h"\n')
        write(self.root, "src/nn/tile_geometry.h", '#pragma once\n#include "core/a.h"\n')
        write(self.root, "src/opt/o.cpp", '#include "core/a.h"\n')
        write(self.root, "src/CMakeLists.txt",
              "hetrec_layer(core SOURCES a.cpp)\nhetrec_layer_glob(data DEPS hetrec_core)\n"
              "add_library(hetrec_geo INTERFACE)\ntarget_link_libraries(hetrec_geo INTERFACE hetrec_core)\n"
              "hetrec_layer_glob(nn DEPS hetrec_data hetrec_geo)\nhetrec_layer_glob(opt DEPS hetrec_core)\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_clean_tree_passes_and_file_patterns_beat_folders(self):
        rc, out, err = run(self.root)
        self.assertEqual((rc, out), (0, []), err)

    def test_include_after_a_line_comment_is_not_an_include(self):
        rc, out, err = run(self.root)
        self.assertEqual((rc, out), (0, []), err)
        append(self.root, "src/core/a.h", '#include "nn/x.h"\n')
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1)
        self.assertEqual(out, ["src/core/a.h:3: [upward-include] core includes nn/x.h of nn, above it in the layer order"])

    def test_sideways_include(self):
        append(self.root, "src/opt/o.cpp", '#include "data/b.h"\n')
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1)
        self.assertEqual(out, ["src/opt/o.cpp:2: [unrelated-include] opt includes data/b.h of data, "
                               "not below it in the layer order"])

    def test_missing_and_upward_links(self):
        write(self.root, "src/CMakeLists.txt",
              "hetrec_layer(core SOURCES a.cpp DEPS hetrec_nn)\nhetrec_layer_glob(data DEPS hetrec_core)\n"
              "add_library(hetrec_geo INTERFACE)\nhetrec_layer_glob(nn DEPS hetrec_data)\n")
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1)
        self.assertIn("src/ CMake: [upward-link] hetrec_core (core) links hetrec_nn (nn), above it in the layer order "
                      "(tools/layers.txt)", out)
        self.assertIn("src/nn/x.h:3: [missing-link] nn includes nn/tile_geometry.h of geo, but hetrec_nn does not "
                      "link hetrec_geo, directly or through what it links", out)

    def test_bad_tables_are_refused_naming_the_line(self):
        for text, expected in (
                ("core hetrec_core core/ -\nnn hetrec_nn nn/ data\n", "layers.txt:2: unit 'nn' names 'data'"),
                ("core hetrec_core core/\n", "layers.txt:1: expected"),
                ("core hetrec_core core/ -\ncore hetrec_x x/ -\n", "layers.txt:2: unit 'core' is declared twice"),
                ("# nothing\n", "declares no unit")):
            write(self.root, "tools/layers.txt", text)
            rc, out, err = run(self.root)
            self.assertEqual(rc, 2, text)
            self.assertIn(expected, err)


if __name__ == "__main__":
    unittest.main()
