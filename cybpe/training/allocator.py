"""Counting inside processes whose C allocator was told to hand memory back at once.

Dask's nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (its setting
``distributed.nanny.pre-spawn-environ``), so that workers return freed memory to the system.
Setting it also switches off glibc's sliding mmap threshold: every allocation over 128 KiB is
then a fresh ``mmap`` whose pages fault in zeroed and are unmapped when freed. Counting a file
allocates several such buffers per 4 M-character block (the bytes read, the decoded text, the
UTF-8 copy, the piece ends), so on a worker it spent a fifth of its time in the kernel.

Counting in a worker with that setting takes noticeably longer, in the kernel (the figures:
docs/history.md, "Counting under Dask").

:func:`roomy_malloc` raises the mmap and trim thresholds while it is entered, in processes
whose environment sets ``MALLOC_TRIM_THRESHOLD_`` (glibc only; elsewhere it does nothing), then
puts back the values from the environment and calls ``malloc_trim(0)``, so the worker still
hands the memory back, once per count instead of once per buffer. Only allocator tuning
changes: no result depends on it.

Thread safety: entries from several threads are counted; the first one in raises the
thresholds and the last one out restores them (under one lock).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from typing import Any, Iterator, Optional

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_GLIBC_MMAP_THRESHOLD = 128 * 1024  # glibc's default (the value the environment setting fixes)
ROOMY_MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
ROOMY_TRIM_THRESHOLD = 256 << 20

_lock = threading.Lock()
_users = 0
_libc: Optional[Any] = None
_libc_checked = False


def is_glibc() -> bool:
    """Whether this process runs on glibc (Linux with GNU libc; not musl, macOS or Windows, where
    the thresholds this module sets do not exist and it does nothing)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (OSError, ValueError, AttributeError):  # musl: no such name; no os.confstr
        return False


def _glibc() -> Optional[Any]:
    global _libc, _libc_checked
    if not _libc_checked:
        _libc_checked = True
        if is_glibc():
            try:
                libc = ctypes.CDLL(None)
                if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim"):
                    _libc = libc
            except (OSError, ValueError, AttributeError):
                _libc = None
    return _libc


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


@contextlib.contextmanager
def roomy_malloc() -> Iterator[bool]:
    """Raise glibc's mmap and trim thresholds meanwhile, where the environment pinned them
    (``MALLOC_TRIM_THRESHOLD_`` set, as in Dask workers); yields whether it did."""
    global _users
    libc = _glibc() if "MALLOC_TRIM_THRESHOLD_" in os.environ else None
    if libc is None:
        yield False
        return
    with _lock:
        _users += 1
        if _users == 1:
            libc.mallopt(_M_MMAP_THRESHOLD, ROOMY_MMAP_THRESHOLD)
            libc.mallopt(_M_TRIM_THRESHOLD, ROOMY_TRIM_THRESHOLD)
    try:
        yield True
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                libc.mallopt(_M_TRIM_THRESHOLD, _env_int("MALLOC_TRIM_THRESHOLD_", 128 * 1024))
                libc.mallopt(_M_MMAP_THRESHOLD, _env_int("MALLOC_MMAP_THRESHOLD_", _GLIBC_MMAP_THRESHOLD))
                libc.malloc_trim(0)
