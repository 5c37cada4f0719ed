"""FlashAttention-2 (PyTorch SDPA's flash kernel) over a grid of problem sizes: how its efficiency
depends on batch x heads, sequence length and head dimension, causal and not. Prints one JSON
object; FLOPs as the FA2 benchmark counts them (forward 4·b·h·s²·d, halved when causal; backward
2.5x forward). Device machine only.
"""

import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import median_ms


def measure(batch, heads, seq, head_dim, causal):
    shape = (batch, heads, seq, head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        forward_ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), repetitions=15)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        grad = torch.randn_like(out)
        backward_ms = median_ms(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True), repetitions=15)
    flops = 4 * batch * heads * seq * seq * head_dim / (2 if causal else 1)
    return {"batch": batch, "heads": heads, "seq": seq, "head_dim": head_dim, "causal": causal,
            "forward_ms": forward_ms, "backward_ms": backward_ms,
            "forward_tflops": flops / forward_ms / 1e9, "backward_tflops": 2.5 * flops / backward_ms / 1e9}


def main():
    torch.manual_seed(0)
    rows = []
    for head_dim in (64, 96, 128):
        for seq in (1024, 2048, 4096):
            for batch in (1, 2, 4, 8):
                rows.append(measure(batch, 16, seq, head_dim, True))
    for batch in (1, 4):
        rows.append(measure(batch, 16, 2048, 128, False))
        rows.append(measure(batch, 16, 2048, 96, False))
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "flash": rows}, indent=1))


if __name__ == "__main__":
    main()
