"""PyTorch reference measurements on a GPU, next to `megasim calibrate --backend cuda`.

Prints one JSON object: a large bf16 matmul through torch (a cross-check of the calibrate command's
cuBLASLt timings) and FlashAttention-2 forward and backward through torch's SDPA flash kernel (the
cost model's flash_attention_*_efficiency, which megasim's CUDA backend does not measure yet).
FLOPs follow the FA2 benchmark's convention: forward 4·b·a·s²·d over the causal half, backward 2.5x.
Runs on the device machine only (it needs torch and a GPU).
"""

import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import median_ms


def matmul(n):
    a = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    b = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    ms = median_ms(lambda: a @ b)
    return {"m": n, "n": n, "k": n, "ms": ms, "tflops": 2 * n**3 / ms / 1e9}


def flash(batch, heads, seq, head_dim):
    shape = (batch, heads, seq, head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        forward_ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        grad = torch.randn_like(out)
        backward_ms = median_ms(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))
    forward_flops = 4 * batch * heads * seq * seq * head_dim / 2
    return {
        "batch": batch, "heads": heads, "seq": seq, "head_dim": head_dim,
        "forward_ms": forward_ms, "backward_ms": backward_ms,
        "forward_tflops": forward_flops / forward_ms / 1e9,
        "backward_tflops": 2.5 * forward_flops / backward_ms / 1e9,
    }


def main():
    torch.manual_seed(0)
    report = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "matmul": [matmul(8192), matmul(16384)],
        # The 175B MegaScale shard (128 heads of dim 96, 16 per TP rank) and the
        # FA2 benchmark's head dimension 128.
        "flash_attention": [flash(1, 16, 2048, 96), flash(4, 16, 2048, 128), flash(2, 16, 4096, 128)],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
