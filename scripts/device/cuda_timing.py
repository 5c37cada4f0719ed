"""Median GPU time of a callable, measured with CUDA events (shared by the device scripts here)."""

import statistics

import torch


def median_ms(fn, repetitions=20, warmups=3):
    """Milliseconds: the median over `repetitions` timed calls (events around each, all queued before
    the first is read) after `warmups` untimed ones."""
    for _ in range(warmups):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    for start, stop in zip(starts, stops):
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in zip(starts, stops))
