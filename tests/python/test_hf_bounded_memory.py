"""The pieces that keep kvoracle.hf.run_tasks' reference rows within the model's own memory at long
inputs (docs/tasks.md, "At scale"): the oracle top-k's tie rule computed without a sort
(heaviest_mask), kept positions found by an exact hash instead of a k x C x d comparison
(key_positions), the per-row profile's meter, and the offline rows refused in one line where their
dense schedule would not fit."""

import pytest
import torch
from kvoracle.hf import tasks
from kvoracle.hf.meter import Meter

pytestmark = pytest.mark.transformers


def test_heaviest_mask_is_a_stable_sorts_top_k():
    g = torch.Generator().manual_seed(3)
    w = torch.randint(0, 4, (5, 7, 40), generator=g).float()  # few values: many exact ties
    valid = torch.rand(5, 7, 40, generator=g) < 0.8
    for k in (1, 3, 10, 39, 40):
        got = tasks.heaviest_mask(w, k, valid)
        ranked = torch.sort(w.masked_fill(~valid, -1.0), dim=-1, descending=True, stable=True).indices[..., :k]
        want = torch.zeros_like(valid).scatter(-1, ranked, True) & valid
        assert torch.equal(got, want), k
    # a row with fewer valid entries than k keeps them all
    assert torch.equal(tasks.heaviest_mask(w, 40, valid), valid)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_key_positions_finds_each_held_key(dtype, monkeypatch):
    g = torch.Generator().manual_seed(1)
    full = torch.randn(300, 16, generator=g).to(dtype)
    full[200] = full[17]  # a repeated key: the earlier position is named
    picked = torch.tensor([250, 3, 17, 200, 99])
    want = torch.tensor([250, 3, 17, 17, 99])
    assert torch.equal(tasks.key_positions(full[picked], full), want)
    stranger = torch.randn(1, 16, generator=g).to(dtype)
    assert tasks.key_positions(torch.cat([full[:2], stranger]), full) is None
    # every hash colliding: each row falls back to the whole comparison, with the same answer
    monkeypatch.setattr(tasks, "_mix", lambda d, device: torch.zeros(d, dtype=torch.long, device=device))
    assert torch.equal(tasks.key_positions(full[picked], full), want)
    assert tasks.key_positions(torch.cat([full[:2], stranger]), full) is None


def fresh_block(size):
    """`size` bytes of anonymous memory the process did not hold before, touched: a new mapping, not
    malloc's, which may hand back pages an earlier test freed and still holds (a CI run saw 4 KiB
    "added" by a 64 MiB torch tensor after the whole suite had run)."""
    import mmap

    block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for i in range(0, size, mmap.PAGESIZE):
        block[i] = 1
    return block


def test_meter_sees_the_memory_the_work_adds():
    import gc
    import time

    # Garbage of earlier tests collected inside the meter would lower the resident set by more than
    # the block adds (seen once in a run beside a build: 152 KiB "added"): collected first, and no collection inside.
    gc.collect()
    gc.disable()
    try:
        with Meter("cpu") as m:
            block = fresh_block(64 * 2**20)
            time.sleep(0.05)
        block.close()
    finally:
        gc.enable()
    assert m.seconds >= 0.05
    assert m.extra_bytes >= 48 * 2**20 and m.peak_bytes >= m.extra_bytes


def test_meter_counts_the_work_while_mapped_file_pages_leave_the_resident_set(tmp_path):
    """The kernel may take a mapped file's clean pages out of the resident set while the work runs
    (a CI run beside a build once saw 196 KiB "added" by a 64 MiB block): what the work added is
    counted in anonymous memory, which such a drop does not touch."""
    import mmap

    size = 64 * 2**20
    path = tmp_path / "mapped.bin"
    path.write_bytes(b"\1" * size)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert sum(mapped[i] for i in range(0, size, mmap.PAGESIZE)) == size // mmap.PAGESIZE  # resident now
        with Meter("cpu") as m:
            mapped.madvise(mmap.MADV_DONTNEED)  # the file's pages leave the resident set...
            block = fresh_block(size)  # ...and the work adds as much again
        block.close()
    assert m.extra_bytes >= 48 * 2**20, m.extra_bytes
