"""F.linear through PyTorch on the shapes of the 175B TP-8 layer, with two operand distributions and
with and without bias: tells whether `megasim calibrate`'s cuBLASLt timings (uniform [-1, 1)
operands, no bias) differ from what PyTorch's GEMMs reach in a training layer, and why. Prints one
JSON object with the median milliseconds and the kernel each call ran. Device machine only.
"""

import json

import torch
import torch.nn.functional as F

from cuda_timing import median_ms

SHAPES = [(2048, 4608, 12288), (2048, 12288, 1536), (2048, 6144, 12288), (2048, 12288, 6144), (8192, 8192, 8192)]


def operands(m, n, k, distribution):
    if distribution == "uniform":
        make = lambda *s: torch.rand(*s, device="cuda", dtype=torch.bfloat16) * 2 - 1
        return make(m, k), make(n, k)
    return (torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
            torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02)


def kernel_names(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.key for e in prof.key_averages() if e.device_time_total > 0})


def main():
    torch.manual_seed(0)
    rows = []
    for m, n, k in SHAPES:
        for distribution in ("uniform", "normal"):
            x, w = operands(m, n, k, distribution)
            bias = torch.zeros(n, device="cuda", dtype=torch.bfloat16)
            plain = median_ms(lambda: F.linear(x, w))
            biased = median_ms(lambda: F.linear(x, w, bias))
            rows.append({"m": m, "n": n, "k": k, "operands": distribution, "ms": plain, "ms_with_bias": biased,
                         "tflops": 2 * m * n * k / plain / 1e9,
                         "kernels": kernel_names(lambda: F.linear(x, w)),
                         "kernels_with_bias": kernel_names(lambda: F.linear(x, w, bias))})
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "linear": rows}, indent=1))


if __name__ == "__main__":
    main()
