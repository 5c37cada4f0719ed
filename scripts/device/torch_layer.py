"""One transformer layer of a tensor-parallel shard, forward and backward, measured with PyTorch.

A reference for the cost model's per-layer compute time (models/op_time.h): the GPT-3 175B layer
(h 12288, 128 heads, FFN 4h, sequence 2048, micro-batch 1) as one rank of TP = 8 runs it, without
its collectives: LayerNorm, QKV GEMM with bias, FlashAttention-2 (torch SDPA's flash kernel, causal,
attention dropout 0.1), output projection, dropout + residual, LayerNorm, FC1 with bias, GeLU, FC2,
dropout + residual. Prints one JSON object with the median forward and forward+backward times, and
the GPU time per layer of the GEMM, FlashAttention and other (memory-bound) kernels from the
PyTorch profiler, to compare with the cost model op class by op class.
Runs on the device machine only (it needs torch and a GPU).
"""

import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import median_ms

HIDDEN, HEADS, SEQ, BATCH, TP = 12288, 128, 2048, 1, 8
FFN = 4 * HIDDEN
DROPOUT = 0.1


def parameter(*shape):
    return torch.nn.Parameter(torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * 0.02)


class ShardLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = HEADS // TP
        self.head_dim = HIDDEN // HEADS
        self.ln1_w, self.ln1_b = parameter(HIDDEN), parameter(HIDDEN)
        self.qkv_w, self.qkv_b = parameter(3 * HIDDEN // TP, HIDDEN), parameter(3 * HIDDEN // TP)
        self.proj_w, self.proj_b = parameter(HIDDEN, HIDDEN // TP), parameter(HIDDEN)
        self.ln2_w, self.ln2_b = parameter(HIDDEN), parameter(HIDDEN)
        self.fc1_w, self.fc1_b = parameter(FFN // TP, HIDDEN), parameter(FFN // TP)
        self.fc2_w, self.fc2_b = parameter(HIDDEN, FFN // TP), parameter(HIDDEN)

    def forward(self, x):  # x: [seq, batch, hidden], Megatron's layout
        h = F.layer_norm(x, (HIDDEN,), self.ln1_w, self.ln1_b)
        qkv = F.linear(h, self.qkv_w, self.qkv_b)
        qkv = qkv.view(SEQ, BATCH, 3, self.heads, self.head_dim).permute(2, 1, 3, 0, 4)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            attn = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], dropout_p=DROPOUT, is_causal=True)
        attn = attn.permute(2, 0, 1, 3).reshape(SEQ, BATCH, HIDDEN // TP)
        x = x + F.dropout(F.linear(attn, self.proj_w, self.proj_b), DROPOUT)
        h = F.layer_norm(x, (HIDDEN,), self.ln2_w, self.ln2_b)
        h = F.gelu(F.linear(h, self.fc1_w, self.fc1_b))
        return x + F.dropout(F.linear(h, self.fc2_w, self.fc2_b), DROPOUT)


def kernel_class(name):
    lowered = name.lower()
    if "flash" in lowered:
        return "attention"
    if any(tag in lowered for tag in ("gemm", "nvjet", "xmma", "cutlass", "cublas")):
        return "gemm"
    return "other"


def kernel_breakdown(fn, iterations=5):
    """GPU milliseconds and kernel counts per call of `fn`, by kernel class."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(iterations):
            fn()
        torch.cuda.synchronize()
    classes = {}
    for event in prof.key_averages():
        if event.device_time_total <= 0:
            continue
        entry = classes.setdefault(kernel_class(event.key), {"ms": 0.0, "kernels": 0})
        entry["ms"] += event.device_time_total / 1e3 / iterations
        entry["kernels"] += event.count / iterations
    return classes


def main():
    torch.manual_seed(0)
    layer = ShardLayer()
    x = torch.randn(SEQ, BATCH, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(SEQ, BATCH, HIDDEN, device="cuda", dtype=torch.bfloat16)

    def forward_backward():
        layer(x).backward(grad)

    forward_ms = median_ms(lambda: layer(x), warmups=5)
    forward_backward_ms = median_ms(forward_backward, warmups=5)
    breakdown = {"forward": kernel_breakdown(lambda: layer(x)), "forward_backward": kernel_breakdown(forward_backward)}
    print(json.dumps({
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "layer": {"hidden": HIDDEN, "heads": HEADS, "ffn": FFN, "seq": SEQ, "micro_batch": BATCH, "tp": TP,
                  "flash_attention": True, "dropout": DROPOUT, "sequence_parallel": False},
        "forward_ms": forward_ms, "forward_backward_ms": forward_backward_ms,
        "backward_ms": forward_backward_ms - forward_ms,
        "kernels": breakdown,
    }, indent=2))


if __name__ == "__main__":
    main()
