"""Meter: the wall time and peak memory of one piece of work (a row of run_tasks), for its profile.

On CUDA the peak is torch's device memory allocated (torch.cuda.max_memory_allocated, reset when the
meter opens); on the CPU it is the process's resident set, sampled from /proc/self/statm every
few milliseconds by a thread while the meter is open. Both are reported as the peak and as the peak
above what was held when the meter opened (what the work itself added). On the CPU what the work
added is counted in anonymous memory (resident less file-backed and shared pages): the kernel may
drop clean pages of a mapped file (a GGUF read through numpy.memmap) from the resident set at any
moment, which would hide what the work allocated beside it.
"""

import os
import threading
import time

import torch

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_and_anonymous_bytes():
    """The process's resident set and its anonymous part now ((0, 0) where /proc is not there)."""
    try:
        with open("/proc/self/statm") as f:
            fields = f.read().split()
        resident, shared = int(fields[1]), int(fields[2])
        return resident * _PAGE, max(0, resident - shared) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0, 0


def available_bytes():
    """Host memory available to new work (MemAvailable), or None where /proc does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return None


class Meter:
    """Context: seconds, peak_bytes and extra_bytes (the peak above the start) of the work inside.

    On the CPU peak_bytes is the resident set's peak and extra_bytes the anonymous memory's peak
    above the start."""

    def __init__(self, device, interval=0.005):
        self.cuda = torch.device(device).type == "cuda"
        self.interval = interval
        self.seconds = self.peak_bytes = self.extra_bytes = 0

    def _take_sample(self):
        resident, anonymous = resident_and_anonymous_bytes()
        self._peak = max(self._peak, resident)
        self._peak_anonymous = max(self._peak_anonymous, anonymous)

    def _sample(self):
        while not self._stop.wait(self.interval):
            self._take_sample()

    def __enter__(self):
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._start_bytes = torch.cuda.memory_allocated()
        else:
            self._peak, self._start_bytes = resident_and_anonymous_bytes()
            self._peak_anonymous = self._start_bytes
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self._t
        if self.cuda:
            self.peak_bytes = torch.cuda.max_memory_allocated()
        else:
            self._stop.set()
            self._thread.join()
            self._take_sample()
            self.peak_bytes = self._peak
        peak_added = self.peak_bytes if self.cuda else self._peak_anonymous
        self.extra_bytes = max(0, peak_added - self._start_bytes)
        return False
