"""Writes broken kvoracle traces for the CLI error tests (standard library only)."""

import json
import math
import struct
import sys


def write(path, tensors, meta=None):
    header = {"__metadata__": meta or {"format": "kvoracle-trace", "format_version": "1"}}
    data = b""
    for name, (shape, values) in tensors.items():
        raw = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


out = sys.argv[1]
n, d = 8, 2
q = [0.1 * i for i in range(n * d)]
write(out + "/shape.safetensors", {"layers.0.q": ([1, n, d], q), "layers.0.k": ([1, n - 1, d], q[: (n - 1) * d])})
bad = list(q)
bad[5 * d + 1] = math.nan
write(out + "/nan.safetensors", {"layers.0.q": ([1, n, d], bad), "layers.0.k": ([1, n, d], q)})
with open(out + "/garbage.safetensors", "wb") as f:
    f.write(b"\xff" * 64)
