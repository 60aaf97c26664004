#!/usr/bin/env python3
"""Fails on GPU-vendor-specific code outside the shim (src/gpu/).

Every kernel and every caller of the device backend is written once for CUDA and HIP;
the vendor lives in src/gpu/ (docs/porting.md). This check scans the C++/CUDA sources of
src/, bench/, tests/ and fuzz/ (src/gpu/ excepted), with comments and string literals
blanked out, and prints `path:line: [rule] text` for every use of a vendor API, header,
intrinsic or macro. Exit status: 0 clean, 1 violations, 2 a bad allow-list or argument.

Allow-list (tools/vendor_api_allowlist.txt): one entry a line,
    <path relative to the root>  <rule>[,<rule>...]  # <why this file may>
An entry permits only the named rules in only that file; an entry that no longer
matches anything is itself an error, so the list cannot outlive its reason.
"""
import argparse
import os
import re
import sys

DEFAULT_DIRS = ("src", "bench", "tests", "fuzz")
SHIM_DIR = "src/gpu"
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".hip")
DEVICE_SUFFIXES = (".cu", ".cuh", ".hip")
DEVICE_ONLY_RULES = {"inline-asm"}

# (rule, what to use instead, pattern). Order matters: a span matched by an earlier
# rule is not matched again, so e.g. cudaDataType counts as blas-lt, not cuda-runtime.
RULES = [
    ("vendor-header", "include gpu/ headers, which pick the vendor's",
     re.compile(r"#\s*include\s*[<\"]\s*(cuda\w*|cu(blas|rand|fft|sparse|solver|dnn|tensor)\w*|cub/|nccl|rccl|hip/|"
                r"hip\w*/|hip\w*\.h|roc(blas|rand|fft|sparse|solver|prim|thrust|wmma|tx|profiler)\w*|thrust/|"
                r"cooperative_groups|nvrtc|nvtx|nvToolsExt|mma\.h|sm_\d|vector_types|device_launch_parameters)")),
    ("blas-lt", "gemm/cublaslt_gemm.h (cublaslt::Gemm), whose backend gpu/blaslt.h maps to either vendor",
     re.compile(r"\b(cublas|hipblas)(Lt)?[A-Z]\w*|\b(CUBLAS|HIPBLAS)(LT)?_\w+|\b(CUDA|HIP)_R_\w+|"
                r"\bcudaDataType\w*|\bhipDataType\b")),
    ("collectives", "a collectives wrapper in gpu/ (NCCL and RCCL share their names)",
     re.compile(r"\b(nccl|rccl)\w*|\b(NCCL|RCCL)_\w+")),
    ("vendor-library", "a gpu/ wrapper or an own kernel",
     re.compile(r"\b(curand|cufft|cusparse|cusolver|cudnn|cutensor|hiprand|hipfft|hipsparse|hipsolver|rocblas|"
                r"rocrand|rocfft|rocsparse|rocsolver|rocprim|miopen|nvrtc|nvtx)\w*|"
                r"\b(CURAND|CUFFT|CUSPARSE|CUSOLVER|CUDNN|ROCBLAS|MIOPEN|NVRTC)_\w+")),
    ("cuda-runtime", "the gpu/ wrappers (gpu::memcpy_async, gpu::Stream, gpu::stream_t, ...)",
     re.compile(r"\bcuda[A-Z]\w*")),
    ("hip-runtime", "the gpu/ wrappers (gpu::memcpy_async, gpu::Stream, gpu::stream_t, ...)",
     re.compile(r"\bhip[A-Z]\w*")),
    ("driver-api", "the gpu/ wrappers",
     re.compile(r"\bcu(Init|Ctx|Device|Mem|Module|Launch|Stream|Event|Func|Graph|Link|Occupancy|Pointer|Array|"
                r"GetErrorString|GetErrorName|Profiler)\w*|\bCU(result|device|context|stream|event|function|module|"
                r"deviceptr|graph|graphExec)\b|\bCUDA_ERROR_\w+|\bCU_[A-Z]\w*")),
    ("device-library", "own kernels (kernels/radix_sort.cu, kernels/scan.cu) and gpu/warp.h",
     re.compile(r"\b(cub|hipcub|thrust|rocprim|nvcuda|cooperative_groups|cuda)\s*::")),
    ("warp-intrinsic", "gpu/warp.h (sized from gpu::kWarpSize; masks are gpu::lane_mask_t)",
     re.compile(r"\b__(shfl\w*|ballot\w*|activemask|syncwarp|any_sync|all_sync|uni_sync|match_\w+_sync|"
                r"reduce_\w+_sync|lane_id|popc\w*|ffs\w*)\b|\bwarpSize\b")),
    ("rounding-intrinsic", "gpu/fp_ops.h (HIP's __fmul_rn and kin are plain operators that clang contracts)",
     re.compile(r"\b__\w+_r[nzud]\b")),
    # Device code only: a CPU file may use asm (a compiler barrier in a benchmark).
    ("inline-asm", "portable C++ (PTX and GCN assembly are vendor-specific)",
     re.compile(r"\basm\b|\b__asm__\b")),
    ("vendor-macro", "gpu/platform.h (HETREC_GPU_CUDA, HETREC_GPU_HIP, HETREC_HD, gpu::kWarpSize)",
     re.compile(r"\b__(CUDA_ARCH__|CUDA_ARCH_LIST__|NVCC__|HIP_DEVICE_COMPILE__|HIP_PLATFORM_\w+__|HIP_ARCH_\w+__|"
                r"AMDGCN\w*|gfx\w+__)|\b(CUDART_\w+|CUDA_VERSION|HIP_VERSION\w*)\b")),
]

# The device-compiler macros are fine where both vendors' are tested together; a test of
# one alone is a branch the other vendor never takes.
COMPILER_MACROS = ("__CUDACC__", "__HIPCC__")
COMPILER_MACRO_RULE = "one-vendor-compiler"
COMPILER_MACRO_HINT = "test __CUDACC__ and __HIPCC__ together, or use gpu/platform.h"

ALL_RULES = {r[0] for r in RULES} | {COMPILER_MACRO_RULE}


def blank_comments_and_strings(text):
    """Returns (without_comments, code_only): the text with comments, and additionally
    string and character literals, replaced by spaces. Newlines are kept, so line numbers
    stay valid. Handles // and /* */ comments, escapes, raw strings R"d(...)d" and digit
    separators (1'000)."""
    n = len(text)
    no_comments = list(text)
    code = list(text)
    i = 0

    def blank(buf, a, b):
        for k in range(a, b):
            if buf[k] != "\n":
                buf[k] = " "

    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(no_comments, i, j)
            blank(code, i, j)
            i = j
        elif c == "/" and nxt == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(no_comments, i, j)
            blank(code, i, j)
            i = j
        elif c == '"':
            raw = re.match(r'R"([^()\\ ]{0,16})\(', text[i - 1:i + 20]) if i > 0 and text[i - 1] == "R" else None
            if raw:
                end = text.find(")" + raw.group(1) + '"', i)
                j = n if end < 0 else end + len(raw.group(1)) + 2
            else:
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j = min(j + 1, n)
            blank(code, i + 1, j - 1)
            i = j
        elif c == "'":
            if i > 0 and text[i - 1].isalnum() and nxt.isalnum() and text[i - 1] not in "uUL":
                i += 1  # digit separator
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            blank(code, i + 1, j - 1)
            i = j
        else:
            i += 1
    return "".join(no_comments), "".join(code)


def scan_text(text, device_file=True):
    """Yields (line_number, rule, matched_text) for one file's contents."""
    no_comments, code = blank_comments_and_strings(text)
    for number, (line_nc, line) in enumerate(zip(no_comments.split("\n"), code.split("\n")), start=1):
        for rule, _hint, pattern in RULES:
            if rule in DEVICE_ONLY_RULES and not device_file:
                continue
            # Includes name their header in quotes, so they are matched before strings go.
            source = line_nc if rule == "vendor-header" else line
            spans = []
            for m in pattern.finditer(source):
                yield number, rule, m.group(0).strip()
                spans.append(m.span())
            if spans:
                chars = list(line)
                for a, b in spans:
                    chars[a:b] = " " * (b - a)
                line = "".join(chars)
        present = [m for m in COMPILER_MACROS if re.search(r"\b" + m + r"\b", line)]
        if len(present) == 1:
            yield number, COMPILER_MACRO_RULE, present[0]


def load_allowlist(path):
    """{relative path: set of rules}; raises ValueError naming the line of a bad entry."""
    allowed = {}
    if not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            body, sep, reason = line.partition("#")
            fields = body.split()
            if len(fields) != 2 or not sep or not reason.strip():
                raise ValueError(f"{path}:{number}: expected '<path> <rule>[,<rule>...]  # <reason>', got: {line}")
            rules = set(fields[1].split(","))
            unknown = rules - ALL_RULES
            if unknown:
                raise ValueError(f"{path}:{number}: unknown rule(s) {', '.join(sorted(unknown))}; "
                                 f"rules: {', '.join(sorted(ALL_RULES))}")
            allowed.setdefault(fields[0], set()).update(rules)
    return allowed


def source_files(root, dirs):
    for d in dirs:
        top = os.path.join(root, d)
        if os.path.isfile(top):
            yield d
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            if rel_dir == SHIM_DIR or rel_dir.startswith(SHIM_DIR + "/"):
                dirnames[:] = []
                continue
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    yield f"{rel_dir}/{name}"


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(here), help="repository root (default: this script's parent)")
    parser.add_argument("--allowlist", default=None, help="allow-list file (default: <root>/tools/vendor_api_allowlist.txt)")
    parser.add_argument("dirs", nargs="*", help=f"directories or files below the root (default: {' '.join(DEFAULT_DIRS)})")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    allowlist_path = args.allowlist or os.path.join(root, "tools", "vendor_api_allowlist.txt")
    try:
        allowed = load_allowlist(allowlist_path)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    dirs = args.dirs or [d for d in DEFAULT_DIRS if os.path.exists(os.path.join(root, d))]
    for d in dirs:
        if not os.path.exists(os.path.join(root, d)):
            print(f"check_vendor_api: {d} does not exist below {root}", file=sys.stderr)
            return 2

    hints = {rule: hint for rule, hint, _ in RULES}
    hints[COMPILER_MACRO_RULE] = COMPILER_MACRO_HINT
    violations = []
    used = set()  # (path, rule) pairs the allow-list actually permitted
    files = 0
    for rel in source_files(root, dirs):
        files += 1
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        found = {}  # (line, rule) -> matched names, in order, once each
        for number, rule, matched in scan_text(text, rel.endswith(DEVICE_SUFFIXES)):
            if rule in allowed.get(rel, ()):
                used.add((rel, rule))
                continue
            names = found.setdefault((number, rule), [])
            if matched not in names:
                names.append(matched)
        for (number, rule), names in found.items():
            violations.append(f"{rel}:{number}: [{rule}] {', '.join(names)}: use {hints[rule]}")

    stale = [f"{allowlist_path}: entry '{path} {rule}' permits nothing any more: remove it"
             for path, rules in sorted(allowed.items()) for rule in sorted(rules)
             if (path, rule) not in used and any(path == r or path.startswith(r.rstrip("/") + "/") for r in dirs)]
    for v in violations:
        print(v)
    for s in stale:
        print(s)
    if violations or stale:
        print(f"check_vendor_api: {len(violations)} vendor-specific use(s) outside {SHIM_DIR}/ in {files} files"
              + (f", {len(stale)} stale allow-list entr{'y' if len(stale) == 1 else 'ies'}" if stale else ""),
              file=sys.stderr)
        return 1
    print(f"check_vendor_api: {files} files, no vendor-specific code outside {SHIM_DIR}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
