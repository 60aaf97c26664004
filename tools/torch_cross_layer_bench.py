#!/usr/bin/env python3
"""One DCNv2 cross layer, x_{l+1} = x0 * (U (V x_l) + b) + x_l, at the MLPerf shape (batch
131072, width 3456, rank 512, bf16 operands and stream), timed in PyTorch four ways to see
what folding the element-wise work into the GEMMs is worth on this GPU:
  gemm            the layer's GEMMs alone (forward: V x_l and U h; forward + backward: the
                  six GEMMs of the layer), cuBLAS through torch.matmul: the fused layer's
                  target;
  eager           the layer as PyTorch runs it unfused (cuBLAS GEMMs, element-wise kernels);
  compile         torch.compile (Inductor's default: cuBLAS GEMMs, fused element-wise kernels);
  autotune        torch.compile mode max-autotune-no-cudagraphs (Inductor's Triton GEMM
                  templates with the element-wise work as their epilogue where it wins).
Each is timed forward only and forward + backward (gradients of x0, x_l, U, V and b).
The floor is the layer's GEMM FLOPs at the measured peak of the gemm row's bf16 matmul
(printed as gemm_tflops). Prints one JSON object.

Usage: tools/torch_cross_layer_bench.py [--batch 131072] [--width 3456] [--rank 512]
                                        [--steps 20] [--modes gemm,eager,compile,autotune]
"""
import argparse
import json
import statistics

import torch


def time_ms(fn, steps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def cross_layer(x0, x, v, u, bias):
    return x0 * (torch.nn.functional.linear(torch.nn.functional.linear(x, v), u, bias)) + x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=131072)
    ap.add_argument("--width", type=int, default=3456)
    ap.add_argument("--rank", type=int, default=512)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--modes", default="gemm,eager,compile,autotune")
    args = ap.parse_args()
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    n, w, r = args.batch, args.width, args.rank
    x0 = torch.randn(n, w, device=dev, dtype=dt, requires_grad=True)
    x = torch.randn(n, w, device=dev, dtype=dt, requires_grad=True)
    v = (torch.randn(r, w, device=dev, dtype=dt) / w**0.5).requires_grad_()
    u = (torch.randn(w, r, device=dev, dtype=dt) / r**0.5).requires_grad_()
    bias = torch.zeros(w, device=dev, dtype=dt, requires_grad=True)
    gy = torch.randn(n, w, device=dev, dtype=dt)
    gemm_flops_fwd = 2 * 2 * n * w * r
    out = {"batch": n, "width": w, "rank": r, "dtype": "bf16", "gpu": torch.cuda.get_device_name(),
           "torch": torch.__version__, "gemm_flops_fwd": gemm_flops_fwd, "gemm_flops_fwd_bwd": 3 * gemm_flops_fwd,
           "modes": {}}

    def fwd_bwd(layer):
        def run():
            y = layer(x0, x, v, u, bias)
            torch.autograd.grad(y, (x0, x, v, u, bias), gy)
        return run

    for mode in args.modes.split(","):
        if mode == "gemm":
            with torch.no_grad():
                h = torch.randn(n, r, device=dev, dtype=dt)
                gh = torch.randn(n, r, device=dev, dtype=dt)

                def fwd():
                    torch.matmul(x, v.t())
                    torch.matmul(h, u.t())

                def both():
                    fwd()
                    torch.matmul(gy, u)        # dL/dh
                    torch.matmul(gy.t(), h)    # dL/dU
                    torch.matmul(gh.t(), x)    # dL/dV
                    torch.matmul(gh, v)        # dL/dx_l through V
                f, fb = time_ms(fwd, args.steps), time_ms(both, args.steps)
            out["gemm_tflops"] = gemm_flops_fwd * 3 / fb / 1e9
        else:
            if mode == "eager":
                layer = cross_layer
            elif mode == "compile":
                layer = torch.compile(cross_layer)
            elif mode == "autotune":
                layer = torch.compile(cross_layer, mode="max-autotune-no-cudagraphs")
            else:
                raise SystemExit(f"--modes: unknown mode {mode!r} (expected gemm, eager, compile, autotune)")
            with torch.no_grad():
                f = time_ms(lambda: layer(x0, x, v, u, bias), args.steps)
            fb = time_ms(fwd_bwd(layer), args.steps)
        out["modes"][mode] = {"fwd_ms": f, "fwd_bwd_ms": fb}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
