"""The threads that batch calls (``encode_ordinary_batch`` and the like) run on: one pool for
the process, kept between calls.

Why kept: each thread that encodes has its own cross-call piece cache (thread_cache.pxd, 4 MiB).
A new pool per call started cold threads whose caches were allocated, filled and freed within
the call, so a batch call never gained from the words earlier calls had merged; the calling
thread's single calls did.

The timings of a new pool per call against the kept one: docs/history.md, "Batch thread pool".

Thread safety: ``run_sliced`` may be called from any number of threads at once; their tasks
share the pool's threads (they never wait on each other, so they cannot deadlock). After
``os.fork`` the child starts with no pool (the parent's threads do not exist there) and makes
its own on first use.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Callable, Optional, Sequence, TypeVar

#: Batch calls asking for more threads than this get a pool of their own, shut down after the
#: call, so that no call can leave thousands of idle threads behind.
MAX_KEPT_THREADS = 64

#: A batch call left to choose its threads (``num_threads=None``) gives each thread at least
#: this much work: characters of text, or ids to decode. Handing a slice to a pool thread costs
#: about 100-200 us, so a second thread pays only once a slice takes longer than that
#: (measured: docs/history.md, "Batch thread count").
MIN_LENGTH_PER_THREAD = 65536

_lock = threading.Lock()
_pool: Optional[ThreadPoolExecutor] = None
_pool_size = 0

T = TypeVar("T")
R = TypeVar("R")


def _forget_pool() -> None:
    global _pool, _pool_size, _lock
    _pool, _pool_size = None, 0
    _lock = threading.Lock()  # a parent's thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def automatic_threads(total_length: int) -> int:
    """How many threads a batch of ``total_length`` characters (or ids) runs on when its caller
    leaves the choice to cybpe: no more than the usable cores, and one more only per
    ``MIN_LENGTH_PER_THREAD`` of work."""
    return max(1, min(usable_cores(), total_length // MIN_LENGTH_PER_THREAD))


def _kept_pool(n: int) -> ThreadPoolExecutor:
    """The process's pool, grown to at least ``n`` threads."""
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < n:
            # The smaller pool is dropped, not shut down: a call that took it just before may
            # still be submitting to it. Its threads end once nothing refers to it
            # (ThreadPoolExecutor's workers hold it weakly and leave when it is collected).
            _pool, _pool_size = ThreadPoolExecutor(n, thread_name_prefix="cybpe"), n
        return _pool


#: Each thread's slice is handed to ``fn`` in at most this many parts, so that an interrupted
#: call (Ctrl-C, or an error in another slice) stops its threads after the part in hand instead
#: of letting them encode the rest of a batch nobody waits for.
PARTS_PER_SLICE = 16

#: How long the calling thread waits for the slices before it looks for a pending signal.
WAIT_SLICE_SECONDS = 0.05


class _Cancelled(Exception):
    """A slice's remaining parts were dropped: the call that wanted them has ended."""


def run_sliced(fn: Callable[[list], list], items: Sequence, n: int) -> list:
    """``fn`` over ``n`` interleaved slices of ``items`` (``items[k::n]``), on ``n`` threads, the
    results put back in ``items``' order. ``fn`` returns one result per item of the list it is
    given (a part of a slice: each slice goes to ``fn`` in up to ``PARTS_PER_SLICE`` parts).

    The first slice runs on the calling thread, the others on the kept pool: one thread handoff
    less per call (about 60 us of a two-thread call's 120 us of overhead), and the caller's
    piece cache, warm from its own single calls, takes a share of the batch.

    When the call ends early (KeyboardInterrupt, or ``fn`` raising in one slice) the other
    threads stop at their next part and queued slices never start."""
    items = list(items)
    n = min(n, len(items))
    if n <= 1:
        return fn(items)
    slices = [items[k::n] for k in range(n)]
    cancelled = threading.Event()

    def run(part_of: list) -> list:
        step = max(1, -(-len(part_of) // PARTS_PER_SLICE))
        out: list = []
        for start in range(0, len(part_of), step):
            if cancelled.is_set():
                raise _Cancelled()
            out.extend(fn(part_of[start:start + step]))
        return out

    def stop_all_if_failed(future: Future) -> None:
        if not future.cancelled() and future.exception() is not None:
            cancelled.set()  # the calling thread's slice stops at its next part too

    own = ThreadPoolExecutor(n - 1) if n > MAX_KEPT_THREADS else None
    pool = own or _kept_pool(n - 1)
    futures = [pool.submit(run, part) for part in slices[1:]]
    for f in futures:
        f.add_done_callback(stop_all_if_failed)
    try:
        try:
            first = run(slices[0])
        except _Cancelled:
            first = None  # a pool slice failed: its error is raised below
        # The first failure ends the wait (not the first slice's end): the others are cancelled.
        # The wait wakes every WAIT_SLICE_SECONDS: a Ctrl-C that the kernel hands to another
        # thread (as it does once some native libraries, polars among them, have started theirs)
        # sets Python's flag without waking this thread, and is raised here at the next wake.
        while True:
            done, pending = wait(futures, timeout=WAIT_SLICE_SECONDS, return_when=FIRST_EXCEPTION)
            if not pending or any(f.exception() is not None for f in done):
                break
        for f in futures:
            if f in done and f.exception() is not None:
                f.result()  # raises it
        parts = [first] + [f.result() for f in futures]
    except BaseException:
        cancelled.set()
        for f in futures:
            f.cancel()
        raise
    finally:
        if own is not None:
            own.shutdown(wait=False)
    out: list = [None] * len(items)
    for k, part in enumerate(parts):
        out[k::n] = part
    return out
