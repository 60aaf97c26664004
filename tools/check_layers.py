#!/usr/bin/env python3
"""Fails on an include that runs up the layer order of src/, or that the build does not back.

The layers and what each may include are one table, tools/layers.txt (its header says
the format). This check
  1. reads the table (an unknown unit, a cycle or a malformed line is an error, exit 2);
  2. scans every `#include "x/..."` line of src/ (one inside any #if branch counts; one
     after `//` does not) and reports each one whose header belongs to
     a unit the including file's unit may not reach through the table, as
         path:line: [upward-include] <unit> includes <header> of <unit>, above it in the layer order
     or [unrelated-include] where neither unit is below the other;
  3. reads the CMake files of src/ (hetrec_layer, hetrec_layer_glob, add_library,
     add_executable, target_link_libraries) and reports
         [upward-link]   a unit's target that links a unit's target the table puts above it or beside it,
         [missing-link]  an include of a unit whose target the including unit's target does not
                         link, directly or through the targets it links.
The build enforces the same (cmake/layer_headers.cmake: each target's include path holds
only its own unit's headers, and the targets it links bring theirs); this check names the
rule an include breaks, and covers the sources a given build does not compile.
Exit status: 0 clean, 1 violations, 2 a bad table or argument.
"""
import argparse
import fnmatch
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inl", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
CMAKE_CALL = re.compile(r"\b(hetrec_layer_glob|hetrec_layer|add_library|add_executable|target_link_libraries)\s*\(([^()]*)\)",
                        re.IGNORECASE)
LINK_KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "SOURCES", "DEPS", "STATIC", "SHARED", "OBJECT"}


class TableError(Exception):
    pass


class Unit:
    def __init__(self, name, target, patterns, below, line):
        self.name, self.target, self.patterns, self.below, self.line = name, target, patterns, below, line


def read_table(path):
    units = {}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            fields = text.split()
            if len(fields) < 4:
                raise TableError(f"{path}:{number}: expected '<unit> <target> <files> <units below...>', got '{text}'")
            name, target, files = fields[0], fields[1], fields[2]
            below = [] if fields[3:] == ["-"] else fields[3:]
            if name in units:
                raise TableError(f"{path}:{number}: unit '{name}' is declared twice (first on line {units[name].line})")
            for b in below:
                if b not in units:
                    raise TableError(f"{path}:{number}: unit '{name}' names '{b}' below it, but '{b}' is not declared "
                                     "on an earlier line (the table lists units bottom to top)")
            units[name] = Unit(name, target, files.split(","), below, number)
    if not units:
        raise TableError(f"{path}: declares no unit")
    return units


def closure(units):
    """unit -> every unit it may include (itself included)."""
    reach = {}
    for name, unit in units.items():  # declaration order is bottom to top
        r = {name}
        for b in unit.below:
            r |= reach[b]
        reach[name] = r
    return reach


def unit_of(units, rel):
    """The unit of a path relative to src/, or None."""
    folder_match, folder_len = None, -1
    for unit in units.values():
        for p in unit.patterns:
            if p.endswith("/"):
                if rel.startswith(p) and len(p) > folder_len:
                    folder_match, folder_len = unit.name, len(p)
            elif fnmatch.fnmatchcase(rel, p):
                return unit.name
    return folder_match


def scan_includes(src, units):
    """Yields (path relative to src, line number, header, unit of the file, unit of the header)."""
    for directory, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            here = unit_of(units, rel)
            if here is None:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m or "/" not in m.group(1):
                        continue
                    there = unit_of(units, m.group(1))
                    if there is not None:
                        yield rel, number, m.group(1), here, there


def read_links(src):
    """CMake target -> set of targets it links (as named in src/**/CMakeLists.txt)."""
    links = {}
    for directory, dirs, files in os.walk(src):
        dirs.sort()
        if "CMakeLists.txt" not in files:
            continue
        with open(os.path.join(directory, "CMakeLists.txt"), encoding="utf-8") as f:
            text = re.sub(r"#[^\n]*", "", f.read())
        for command, args in CMAKE_CALL.findall(text):
            words = args.split()
            if not words:
                continue
            command = command.lower()
            if command in ("hetrec_layer", "hetrec_layer_glob"):
                target = "hetrec_" + words[0]
                deps = words[words.index("DEPS") + 1:] if "DEPS" in words else []
            elif command in ("add_library", "add_executable"):
                target, deps = words[0], []
            else:
                target, deps = words[0], words[1:]
            links.setdefault(target, set()).update(d for d in deps if d not in LINK_KEYWORDS)
    return links


def link_closure(links, target):
    seen, stack = set(), [target]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        stack.extend(links.get(t, ()))
    return seen


def check(root, table):
    units = read_table(table)
    reach = closure(units)
    src = os.path.join(root, "src")
    if not os.path.isdir(src):
        raise TableError(f"{root}: has no src/ folder")
    by_target = {u.target: u.name for u in units.values()}
    links = read_links(src)
    problems = []

    for target, deps in sorted(links.items()):
        here = by_target.get(target)
        if here is None:
            continue
        for dep in sorted(deps):
            there = by_target.get(dep)
            if there is not None and there != here and there not in reach[here]:
                where = "above it in" if here in reach[there] else "not below it in"
                problems.append(f"src/ CMake: [upward-link] {target} ({here}) links {dep} ({there}), {where} "
                                f"the layer order ({os.path.relpath(table, root)})")

    missing = set()
    for rel, number, header, here, there in scan_includes(src, units):
        if there == here:
            continue
        if there not in reach[here]:
            rule, what = (("upward-include", "above it in the layer order") if here in reach[there]
                          else ("unrelated-include", "not below it in the layer order"))
            problems.append(f"src/{rel}:{number}: [{rule}] {here} includes {header} of {there}, {what}")
            continue
        target, dep = units[here].target, units[there].target
        if target in links and dep not in link_closure(links, target) and (target, dep) not in missing:
            missing.add((target, dep))
            problems.append(f"src/{rel}:{number}: [missing-link] {here} includes {header} of {there}, but {target} "
                            f"does not link {dep}, directly or through what it links")
    return problems


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", default=os.path.dirname(here), help="the repository root")
    parser.add_argument("--table", help="the layer table (default: <root>/tools/layers.txt)")
    args = parser.parse_args()
    table = args.table or os.path.join(args.root, "tools", "layers.txt")
    try:
        problems = check(args.root, table)
    except (TableError, OSError) as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} violation(s) of {os.path.relpath(table, args.root)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
