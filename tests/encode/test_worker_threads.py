"""The pool batch calls run on (cybpe/encode/worker_threads.py): kept between calls, safe to
share between calling threads, and rebuilt in a forked child."""

from __future__ import annotations

import os
import sys
import threading
import warnings

import pytest

import cybpe
from cybpe.encode import worker_threads
from cybpe.api import tokenizer as tokenizer_module
from cybpe.encode.worker_threads import MAX_KEPT_THREADS, MIN_LENGTH_PER_THREAD, automatic_threads, run_sliced
from support import UDHR_DIR


def _names(part: list) -> list:
    return [(item, threading.current_thread().name) for item in part]


def test_results_come_back_in_order_for_every_thread_count():
    items = list(range(37))
    for n in (-1, 0, 1, 2, 3, 8, 36, 37, 50, MAX_KEPT_THREADS + 1):
        assert [item for item, _ in run_sliced(_names, items, n)] == items, n
    assert run_sliced(_names, [], 4) == []


def test_automatic_thread_count(monkeypatch):
    """One thread per MIN_LENGTH_PER_THREAD of work, at least one, at most one per usable core."""
    assert 1 <= worker_threads.usable_cores() <= (os.cpu_count() or 1)
    monkeypatch.setattr(worker_threads, "usable_cores", lambda: 8)
    assert [automatic_threads(n) for n in (0, 1, MIN_LENGTH_PER_THREAD - 1, MIN_LENGTH_PER_THREAD)] == [1, 1, 1, 1]
    assert automatic_threads(3 * MIN_LENGTH_PER_THREAD + 5) == 3
    assert automatic_threads(100 * MIN_LENGTH_PER_THREAD) == 8
    monkeypatch.setattr(worker_threads, "usable_cores", lambda: 2)
    assert automatic_threads(100 * MIN_LENGTH_PER_THREAD) == 2


def test_batch_calls_choose_their_threads_unless_told(monkeypatch):
    """num_threads=None (the default) runs a small batch on the calling thread alone and a large
    one on one thread per MIN_LENGTH_PER_THREAD characters (or ids); a number given is kept."""
    tok = cybpe.train([(UDHR_DIR / "en.txt").read_text(encoding="utf-8")], vocab_size=300)
    monkeypatch.setattr(worker_threads, "usable_cores", lambda: 8)
    asked: list = []
    real = tokenizer_module.run_sliced

    def spy(fn, items, n):
        asked.append(n)
        return real(fn, items, n)
    monkeypatch.setattr(tokenizer_module, "run_sliced", spy)
    small = ["a few words"] * 10
    large = ["x" * 1000 + " words"] * (3 * MIN_LENGTH_PER_THREAD // 1000)
    for call in (tok.encode_ordinary_batch, tok.encode_batch, tok.encode_batch_with_offsets):
        asked.clear()
        call(small)
        call(large)
        call(small, num_threads=4)
        assert asked == [1, 3, 4], call
    expected = [tok.encode_ordinary(t) for t in large[:2]]
    assert tok.encode_ordinary_batch(large)[:2] == expected
    ids = [tok.encode_ordinary("x" * 1000)] * (2 * MIN_LENGTH_PER_THREAD // 50)
    asked.clear()
    tok.decode_batch(ids[:3])
    tok.decode_bytes_batch(ids)
    assert asked[0] == 1 and 1 < asked[1] == min(8, sum(map(len, ids)) // MIN_LENGTH_PER_THREAD)


def test_the_pool_is_kept_between_calls():
    """The first slice runs on the calling thread, the others on the same kept threads call
    after call (their piece caches stay warm); a larger request grows the pool; a request above
    MAX_KEPT_THREADS gets threads of its own."""
    caller = threading.current_thread().name
    first = run_sliced(_names, list(range(40)), 2)
    assert {name for item, name in first if item % 2 == 0} == {caller}
    later = set()
    for _ in range(5):
        later |= {name for item, name in run_sliced(_names, list(range(40)), 2) if item % 2}
    assert all(name.startswith("cybpe") for name in later)
    pool = worker_threads._pool
    run_sliced(_names, list(range(40)), 2)
    assert worker_threads._pool is pool
    run_sliced(_names, list(range(40)), worker_threads._pool_size + 2)
    assert worker_threads._pool is not pool
    big = {name for _, name in run_sliced(_names, list(range(200)), MAX_KEPT_THREADS + 1)}
    assert not any(name.startswith("cybpe") for name in big)


def test_callers_on_many_threads_while_the_pool_grows():
    """Eight calling threads, each asking for a different number of threads, so the pool is
    replaced while others submit to it: every call completes with its own results."""
    errors: list[BaseException] = []

    def caller(k: int) -> None:
        try:
            for round_ in range(20):
                items = list(range(k * 100 + round_))
                got = run_sliced(lambda part: [x * 2 for x in part], items, 2 + (k + round_) % 7)
                assert got == [x * 2 for x in items]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                    reason="needs os.fork (and fork with threads is unsafe on macOS)")
def test_a_forked_child_makes_its_own_pool():
    """The parent's pool threads do not exist in a forked child: a batch call there must not
    wait for them forever."""
    tok = cybpe.train([(UDHR_DIR / "en.txt").read_text(encoding="utf-8")], vocab_size=300)
    texts = ["hello world", "a second text", "and a third"] * 4
    expected = [tok.encode_ordinary(t) for t in texts]
    assert tok.encode_ordinary_batch(texts, num_threads=2) == expected  # the parent's pool exists
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns that forking a threaded process may deadlock
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        try:
            ok = tok.encode_ordinary_batch(texts, num_threads=2) == expected
            os.write(write, b"ok" if ok else b"wrong")
        finally:
            os._exit(0)
    os.close(write)
    try:
        import select

        ready, _, _ = select.select([read], [], [], 60)
        answer = os.read(read, 16) if ready else b"timeout"
    finally:
        os.close(read)
        if not ready:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert answer == b"ok"
