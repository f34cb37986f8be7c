"""Memory mapped in one call: on a virtual machine a page fault per 4 KB page, as a fresh
array fills, costs several times what the kernel's ``MAP_POPULATE`` costs for the whole
region at once (measured here: 160 MB filled through faults 0.15-0.4 s, populated 0.05-0.07
s). The parse's columns, blocks and scan outputs are made here; elsewhere, and for small
sizes, plain numpy."""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np

SMALL = 1 << 20
"""Below this many bytes, plain allocations (a mapping is not worth its call)."""


def populated_buffer(nbytes: int) -> Any:
    """A writable buffer of ``nbytes`` zero bytes, mapped in at once where the kernel can
    (an anonymous ``mmap``), else a ``bytearray``."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if nbytes >= SMALL and populate:
        try:
            return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
        except OSError:
            pass
    return bytearray(nbytes)


def populated(shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
    """An array of ``shape`` over a :func:`populated_buffer` (zeros)."""
    count = int(np.prod(shape))
    dt = np.dtype(dtype)
    if count * dt.itemsize < SMALL:
        return np.zeros(shape, dtype=dt)
    return np.frombuffer(populated_buffer(count * dt.itemsize), dtype=dt, count=count).reshape(shape)
