#!/usr/bin/env python3
"""Fails on a source file of src/ whose namespace is not its layer unit's.

Every unit of tools/layers.txt declares its code in one namespace, listed in NAMESPACES
below: core in `hetrec` itself, every other unit in `hetrec::<name>` (a unit of a folder's
files takes the folder's namespace: kernels_geometry is hetrec::kernels, model_gpu is
hetrec::model::gpu_model, ...). A file may open its unit's namespace or one nested in it
(hetrec::gemm::cublaslt in gemm, hetrec::plan::json_fields in plan); the model_gpu unit
may also open hetrec::model (the GPU model's public interface beside the CPU one).

The namespaces of the units the upper layers name by plain names (data, hw, gemm_perf,
gemm, optim, nn, dispatch, model, plan, train) are inline in `hetrec`: `hetrec::Batch`
and `hetrec::data::Batch` are one type, and a name two of them declare is an ambiguity
the compiler reports. They must be opened as `namespace hetrec::inline <name>`, since a
namespace reopened without `inline` is another namespace once the first opening is not
seen. The others (gpu, kernels, dist, tune, report, cli, python) are not inline.

Checked: each line of a file of src/ that opens a namespace starting with `hetrec` at
the start of the line, as
    path:line: [namespace] <unit> opens <namespace>, expected <expected>
Exit status: 0 clean, 1 violations, 2 a bad table or argument.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_layers  # noqa: E402  (the layer table and a file's unit)

# unit -> (namespace, inline); the namespaces other units may also open follow below.
NAMESPACES = {
    "core": ("hetrec", False),
    "hw": ("hetrec::hw", True),
    "gpu": ("hetrec::gpu", False),
    "kernels_geometry": ("hetrec::kernels", False),
    "kernels": ("hetrec::kernels", False),
    "gemm_perf": ("hetrec::gemm_perf", True),
    "gemm": ("hetrec::gemm", True),
    "data": ("hetrec::data", True),
    "dist": ("hetrec::dist", False),
    "optim": ("hetrec::optim", True),
    "nn": ("hetrec::nn", True),
    "tune": ("hetrec::tune", False),
    "dispatch": ("hetrec::dispatch", True),
    "model": ("hetrec::model", True),
    "model_gpu_geometry": ("hetrec::model::gpu_model", False),
    "tune_gpu": ("hetrec::tune", False),
    "model_gpu": ("hetrec::model::gpu_model", False),
    "plan": ("hetrec::plan", True),
    "train": ("hetrec::train", True),
    "report": ("hetrec::report", False),
    "cli": ("hetrec::cli", False),
    "python": ("hetrec::python", False),
}
# The GPU model's public interface (GpuModel, make_gpu_model) is the model layer's.
ALSO = {"model_gpu": ["hetrec::model"], "model_gpu_geometry": ["hetrec::model"]}
OPENING = re.compile(r"^namespace\s+(hetrec(?:::(?:inline\s+)?[A-Za-z_]\w*)*)\s*\{")


def written_form(namespace, inline_units):
    """How a file must spell `namespace`: with `inline` before each inline component."""
    parts = namespace.split("::")
    out = [parts[0]]
    for i, p in enumerate(parts[1:], 1):
        prefix = "::".join(parts[: i + 1])
        out.append(("inline " if prefix in inline_units else "") + p)
    return "::".join(out)


def check(root, table):
    units = check_layers.read_table(table)
    problems = []
    missing = [u for u in units if u not in NAMESPACES]
    if missing:
        raise check_layers.TableError(f"{table}: unit(s) {', '.join(missing)} have no namespace in "
                                      "tools/check_namespaces.py NAMESPACES")
    inline_units = {ns for ns, inline in NAMESPACES.values() if inline}
    src = os.path.join(root, "src")
    for dirpath, _, files in sorted(os.walk(src)):
        for name in sorted(files):
            if not name.endswith(check_layers.SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            unit = check_layers.unit_of(units, rel)
            if unit is None:
                continue
            allowed = [NAMESPACES[unit][0]] + ALSO.get(unit, [])
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = OPENING.match(line)
                    if not m:
                        continue
                    spelled = re.sub(r"\s+", " ", m.group(1))
                    plain = spelled.replace("inline ", "")
                    inside = [a for a in allowed if plain == a or plain.startswith(a + "::")]
                    expected = written_form(plain, inline_units) if inside else None
                    if unit == "core" and plain != "hetrec":
                        # core's nested helpers (hetrec::seed_streams) must not take a unit's name.
                        first = plain.split("::")[1]
                        taken = {ns.split("::")[1] for ns, _ in NAMESPACES.values() if "::" in ns}
                        if first in taken:
                            inside, expected = [], None
                    if not inside:
                        want = " or ".join(written_form(a, inline_units) for a in allowed)
                        problems.append(f"src/{rel}:{number}: [namespace] {unit} opens {spelled}, expected {want} "
                                        "(or a namespace nested in it)")
                    elif spelled != expected:
                        problems.append(f"src/{rel}:{number}: [namespace] {unit} opens {spelled}, expected {expected} "
                                        "(inline namespaces are opened inline)")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", default=os.path.dirname(HERE), help="the repository root")
    parser.add_argument("--table", help="the layer table (default: <root>/tools/layers.txt)")
    args = parser.parse_args()
    table = args.table or os.path.join(args.root, "tools", "layers.txt")
    try:
        problems = check(args.root, table)
    except (check_layers.TableError, OSError) as e:
        print(f"check_namespaces: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    if problems:
        print(f"check_namespaces: {len(problems)} file namespace(s) not their unit's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
