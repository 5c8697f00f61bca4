"""Issue 39 (reliability, round two), items 9, 10 and the encode_batch item of "Also".

* a process forked while another thread is inside a call of a public object (ChunkCounts.update
  above all) must not hang in the child: each call there completes or raises ConcurrentUseError;
* ``chunks(text, n, overlap=k)``: every window ends past the previous one and starts no later
  than the previous end, so the windows make progress and cover the text;
* an interrupted ``encode_batch`` stops its threads' work instead of finishing the batch.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

import cybpe
from cybpe.encode import worker_threads
from cybpe.errors import ConcurrentUseError
from support import SKIP_REASON, shared_path

TEXT = "Hello world, the quick brown fox. 12345 jumps! Ünïcödé 中文 🙂\n  done. " * 40


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return cybpe.train([TEXT], 320, special_tokens=["<|endoftext|>"], progress=False)


# ------------------------------------------------------------------ 9: fork while a thread works

pytestmark_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _fork_and_check(child_calls, ready, seconds: int = 10) -> str:
    """Fork once ``ready()`` says the other thread is inside its call; the child runs
    ``child_calls()`` under an alarm. Returns 'ok', 'refused' (ConcurrentUseError) or raises
    AssertionError when the child hung or failed otherwise."""
    deadline = time.monotonic() + 10
    while not ready():
        assert time.monotonic() < deadline, "the worker thread never started its call"
        time.sleep(0.0005)
    pid = os.fork()
    if pid == 0:  # the child: no pytest from here on
        code = 1
        try:
            signal.alarm(seconds)
            child_calls()
            code = 0
        except ConcurrentUseError:
            code = 3
        except BaseException:  # noqa: BLE001 - reported through the exit status
            code = 4
        finally:
            os._exit(code)
    end = time.monotonic() + seconds + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("the child hung")
        time.sleep(0.01)
    if os.WIFSIGNALED(status):
        raise AssertionError(f"the child was killed by signal {os.WTERMSIG(status)} (hung until the alarm?)")
    code = os.WEXITSTATUS(status)
    assert code in (0, 3), f"the child failed with exit status {code}"
    return "ok" if code == 0 else "refused"


class _Busy:
    """A thread calling ``work`` in a loop until stopped."""

    def __init__(self, work):
        self.stop = threading.Event()
        self.errors: list = []

        def run():
            while not self.stop.is_set():
                try:
                    work()
                except ConcurrentUseError:
                    pass
                except BaseException as exc:  # noqa: BLE001
                    self.errors.append(exc)
                    return
        self.thread = threading.Thread(target=run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(60)
        assert not self.errors, self.errors


@pytestmark_fork
@pytest.mark.parametrize("round_", range(3))
def test_fork_during_chunkcounts_update(tmp_path, round_):
    counts = cybpe.ChunkCounts("cl100k").update(["warm up"])
    big = [TEXT * 20]

    def child():
        for call in (lambda: list(counts.items()), lambda: pickle.dumps(counts), counts.copy,
                     lambda: counts.update(["more text"]), lambda: counts.save(tmp_path / f"c{round_}.cnt"),
                     lambda: counts.most_common(3), lambda: counts + counts):
            try:
                call()
            except ConcurrentUseError:
                pass
        # a ChunkCounts made in the child works
        fresh = cybpe.ChunkCounts("cl100k").update(["child text"])
        assert fresh.total > 0

    with _Busy(lambda: counts.update(big)):
        _fork_and_check(child, ready=lambda: counts._writer.locked())


@pytestmark_fork
def test_fork_beside_a_reader_thread(tmp_path):
    counts = cybpe.ChunkCounts("cl100k").update([TEXT * 50])

    def child():
        try:
            counts.most_common(2)
        except ConcurrentUseError:
            pass
        cybpe.ChunkCounts("cl100k").update(["x"]).items()

    with _Busy(lambda: counts.most_common(5)):
        _fork_and_check(child, ready=lambda: counts._state.locked())


@pytestmark_fork
def test_fork_during_tokenizer_calls(tok, tmp_path):
    """Each public type, beside threads using it: encode, batches on the kept pool, save."""
    texts = [TEXT] * 64
    inside = threading.Event()

    def work():
        inside.set()
        tok.encode_batch(texts, num_threads=2)
        tok.encode_ordinary_batch(texts, num_threads=2)
        tok.save(tmp_path / "busy.json")

    def child():
        assert tok.encode("hello world") == tok.encode_batch(["hello world"], num_threads=2)[0]
        tok.encode_ordinary_batch(texts[:4], num_threads=3)
        tok.save(tmp_path / "child.json")
        pickle.loads(pickle.dumps(tok))
        cybpe.Tokenizer.load(tmp_path / "child.json")
        decoder = tok.stream_decoder()
        for i in tok.encode("héllo"):
            decoder.feed([i])
        decoder.flush()
        list(tok.chunks(TEXT[:200], 20, overlap=3))
        cybpe.get_pretokenizer("cl100k").split("a b")

    with _Busy(work):
        for _ in range(3):
            _fork_and_check(child, ready=inside.is_set)
            time.sleep(0.01)


# ------------------------------------------------------------------ 10: chunks make progress


def _check_windows(tokenizer, text: str, max_tokens: int, overlap: int) -> None:
    windows = list(tokenizer.chunks(text, max_tokens, overlap=overlap, disallowed_special=()))
    if not text:
        assert windows == [] or [(w.start, w.end) for w in windows] == [(0, 0)]
        return
    assert windows[0].start == 0 and windows[-1].end == len(text)
    for previous, window in zip(windows, windows[1:]):
        assert window.end > previous.end, (previous, window)      # progress
        assert window.start <= previous.end, (previous, window)   # coverage
        assert window.start >= previous.start, (previous, window)
    for w in windows:
        assert w.text == text[w.start:w.end]
        assert len(tokenizer.encode(w.text, disallowed_special=())) <= max_tokens


def test_chunks_issue_case_on_cl100k():
    shared = shared_path()
    if shared is None:
        pytest.skip(SKIP_REASON)
    cl100k = cybpe.Tokenizer.from_tiktoken(shared / "vocab" / "cl100k_base.tiktoken")
    windows = [(w.start, w.end) for w in cl100k.chunks("0\x81\x81", 3, overlap=1)]
    assert windows == [(0, 2), (1, 3)] or all(b[1] > a[1] for a, b in zip(windows, windows[1:])), windows
    _check_windows(cl100k, "0\x81\x81", 3, 1)
    for text in ("0\x81\x81" * 5, "é\u0301\x81 a\x81\x81b 🙂🙂x", "\x81" * 9):
        for n in (2, 3, 4, 6):
            for k in range(n):
                try:
                    _check_windows(cl100k, text, n, k)
                except cybpe.errors.InvalidParameterError:
                    pass  # a character needs more than n tokens


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("0a é\x81\u0301🙂中\n")), max_size=40),
       max_tokens=st.integers(2, 8), data=st.data())
def test_chunks_make_progress_and_cover(tok, text, max_tokens, data):
    overlap = data.draw(st.integers(0, max_tokens - 1))
    try:
        _check_windows(tok, text, max_tokens, overlap)
    except cybpe.errors.InvalidParameterError as exc:
        assert "too small" in str(exc)


# ------------------------------------------------------------------ Also: interrupted batches


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler, unblocked in this thread, for the test: what another test of
    the same process left behind (a library's handler, an ignored or blocked SIGINT) must not
    decide whether these tests see their KeyboardInterrupt. Restored afterwards."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    signal.signal(signal.SIGINT, previous)


def _counting_slow(calls: list):
    """A slice function that takes 2 ms an item and counts the items it has started."""
    def slow(part):
        for _ in part:
            calls.append(1)
            time.sleep(0.002)
        return list(part)
    return slow


def test_run_sliced_stops_abandoned_work_on_interrupt(python_sigint):
    calls: list = []
    slow = _counting_slow(calls)

    timer = threading.Timer(0.15, os.kill, (os.getpid(), signal.SIGINT))  # a real signal: it wakes the wait
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        worker_threads.run_sliced(slow, range(4000), 2)  # 4 s of work on two threads
    timer.cancel()
    time.sleep(1.0)  # what is still running finishes its part (1/16 of a slice: about 0.25 s)
    settled = len(calls)
    time.sleep(0.5)
    assert len(calls) == settled, "the threads kept working on the abandoned batch"
    assert settled < 4000 / 2


def test_run_sliced_stops_other_slices_when_one_fails():
    calls = []

    def fn(part):
        out = []
        for x in part:
            calls.append(x)
            if x == 1:
                raise ValueError("bad item")
            time.sleep(0.002)
            out.append(x)
        return out

    with pytest.raises(ValueError):
        worker_threads.run_sliced(fn, range(2000), 2)
    time.sleep(1.0)
    settled = len(calls)
    time.sleep(1.0)
    assert len(calls) == settled and settled < 1000


def test_interrupted_encode_batch_stops_encoding(tok, monkeypatch, python_sigint):
    calls = []
    real = cybpe.Tokenizer.encode

    def counted(self, text, **kwargs):
        calls.append(1)
        time.sleep(0.002)
        return real(self, text, **kwargs)

    monkeypatch.setattr(cybpe.Tokenizer, "encode", counted)
    timer = threading.Timer(0.15, os.kill, (os.getpid(), signal.SIGINT))  # a real signal: it wakes the wait
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        tok.encode_batch(["hello world"] * 4000, num_threads=2)
    timer.cancel()
    time.sleep(1.0)
    settled = len(calls)
    time.sleep(0.5)
    assert len(calls) == settled, "encode_batch's threads kept encoding after the interrupt"
    assert settled < 4000
    assert tok.encode_batch(["a b"] * 10, num_threads=2) == [tok.encode("a b")] * 10  # the pool still works


def test_a_ctrl_c_caught_by_another_thread_still_interrupts_the_wait(python_sigint):
    """The kernel may hand a process's SIGINT to any thread that does not block it (it does once
    some native libraries, polars among them, have started theirs); Python then only sets a flag,
    and a main thread asleep in the wait would not see it before the batch ends. Here the signal
    goes to the timer's own thread: the wait still ends within its wake interval."""
    calls: list = []
    slow = _counting_slow(calls)

    timer = threading.Timer(0.15, lambda: signal.pthread_kill(threading.get_ident(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        worker_threads.run_sliced(slow, range(4000), 2)  # 4 s of work on two threads
    timer.cancel()
    assert time.monotonic() - started < 2.0, "the interrupt waited for the batch"
    time.sleep(1.0)
    assert len(calls) < 4000 / 2
