"""Regression tests for the crash, hang, silent wrong results and untyped errors of issue 11.

Each test reproduces one finding of the hostile review and checks the fixed behaviour (a typed
error or the right answer). The broad, enumerating probes are in ``test_hostile_api.py``
(arguments), ``test_hostile_files.py`` (corrupt files) and ``test_thread_safety.py``.
"""

from __future__ import annotations

import json
import os
import pickle
import stat
import threading
import time

import pytest

import cybpe
from cybpe.errors import (
    ConcurrentUseError,
    CybpeError,
    EncodingError,
    FormatError,
    InvalidParameterError,
    InvalidTokenError,
    ParameterTypeError,
    PatternTimeoutError,
    SaveError,
    TooLargeError,
)
from support import HANG_GUARD_SECONDS

TEXT = "Hello world, the quick brown fox jumps over the lazy dog. 12345 Ünïcödé 中文\n"


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return cybpe.train([TEXT * 30], 320, special_tokens=["<|eot|>"], progress=False)


@pytest.fixture(scope="module")
def gpt2_tok() -> cybpe.Tokenizer:
    """Trained with GPT-2's pre-tokenizer: GPT-2 files cannot carry another one (to_gpt2 refuses)."""
    return cybpe.train([TEXT * 30], 320, "gpt2", special_tokens=["<|eot|>"], progress=False)


@pytest.fixture()
def quick_regex_bound():
    previous = cybpe.set_regex_timeout(0.2, 2.0)
    yield
    cybpe.set_regex_timeout(*previous)


# ------------------------------------------------------------------------------------ crash


def _big_batch(n: int = 6000, tag: str = "") -> list[str]:
    """Texts with many new chunks (so that counting them grows the table)."""
    return [f"word{tag}{i} other{tag}{i * 7} more{i % 97} " * 40 for i in range(n)]


def test_chunk_counts_reads_while_another_thread_updates():
    """Reads during a GIL-free update used to read freed memory (SIGSEGV); now they wait."""
    counts = cybpe.ChunkCounts("cl100k")
    batches = [[f"word{i} other{i * 7} " * 50 for i in range(20_000)]] * 3
    done = threading.Event()
    errors: list[BaseException] = []

    def writer():
        try:
            for batch in batches:
                counts.update(batch)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            done.set()

    # Readers see whole writing calls, so after k of the identical batches the two most common
    # chunks are one batch's, counted k times.
    by_count = sorted(cybpe.ChunkCounts("cl100k").update(batches[0]).items(), key=lambda item: -item[1])
    top_of_one = by_count[:2]
    assert by_count[0][1] > by_count[1][1] > by_count[2][1]  # no ties: one right answer
    possible_tops = [[]] + [[(chunk, n * k) for chunk, n in top_of_one] for k in range(1, len(batches) + 1)]
    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while not done.is_set() or reads < 3:
        items = list(counts.items())
        chunks, weights = counts.sorted_arrays()
        assert [c for c, _ in items] == sorted(c for c, _ in items) and all(n > 0 for _, n in items)
        assert chunks == sorted(chunks) and len(chunks) == len(weights) and (weights > 0).all()
        assert len(items) <= len(chunks)  # a later read sees at least as much
        copy = counts.copy()
        assert len(copy) <= len(counts)
        assert counts.most_common(2) in possible_tops
        again = pickle.loads(pickle.dumps(counts))
        assert again.total <= counts.total
        if reads % 8 == 7 and len(counts):
            again += counts
            cybpe.train(counts, 257, progress=False)
        reads += 1
    thread.join()
    assert not errors
    reference = cybpe.ChunkCounts("cl100k")
    for batch in batches:
        reference.update(batch)
    assert counts == reference


def test_two_concurrent_updates_raise_a_typed_error():
    counts = cybpe.ChunkCounts("cl100k")
    batch = _big_batch(3000)
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def writer():
        start.wait()
        try:
            counts.update(batch)
            outcomes.append("ok")
        except ConcurrentUseError:
            outcomes.append("busy")

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reference = cybpe.ChunkCounts("cl100k").update(batch)
    assert sorted(outcomes) in (["busy", "ok"], ["ok", "ok"])
    expected = reference.total * outcomes.count("ok")
    assert counts.total == expected  # the refused call counted nothing
    assert issubclass(ConcurrentUseError, RuntimeError) and issubclass(ConcurrentUseError, CybpeError)


# ------------------------------------------------------------------------------------- hang


def test_regex_fallback_has_a_time_bound(quick_regex_bound):
    pre = cybpe.get_pretokenizer("regex", pattern=r"(a+)+$")
    text = "a" * 100_000 + "!"
    for split in (pre.split, pre.with_regex_only().split_spans):  # compiled matcher first; regex only
        started = time.perf_counter()
        with pytest.raises(PatternTimeoutError) as caught:
            split(text)
        # a hang guard, not a speed check: the regex module checks its timeout coarsely
        assert time.perf_counter() - started < HANG_GUARD_SECONDS
        message = str(caught.value)
        assert "(a+)+$" in message and "position" in message
    assert issubclass(PatternTimeoutError, TimeoutError)


def test_regex_bound_covers_count_encode_and_train(tmp_path, quick_regex_bound, tok):
    text = "a" * 5_000 + "!"
    counts = cybpe.ChunkCounts("regex", pattern=r"(a+)+$")
    with pytest.raises(PatternTimeoutError):
        counts.update([text])
    with pytest.raises(PatternTimeoutError):
        cybpe.train([text], 260, pretokenizer="regex", progress=False,
                    pretokenizer_params={"pattern": r"(a+)+$"})
    # A saved tokenizer naming such a pattern loads, then count() stops at the bound.
    slow = cybpe.Tokenizer(tok.vocab, cybpe.get_pretokenizer("regex", pattern=r"(a+)+$"))
    slow.save(tmp_path / "slow.json")
    loaded = cybpe.Tokenizer.load(tmp_path / "slow.json")
    for call in (loaded.count, loaded.encode):
        with pytest.raises(PatternTimeoutError):
            call(text)


def test_regex_bound_is_configurable():
    previous = cybpe.set_regex_timeout(30.0, 0.0)
    try:
        assert cybpe.set_regex_timeout(1.0, 2.0) == (30.0, 0.0)
        for bad in ((-1.0, 1.0), ("1", 1.0), (0.0, 0.0), (float("inf"), 1.0)):
            with pytest.raises(InvalidParameterError):
                cybpe.set_regex_timeout(*bad)
    finally:
        cybpe.set_regex_timeout(*previous)
    # an ordinary pattern is far inside the default bound
    pre = cybpe.get_pretokenizer("regex", pattern=r"\w+|\s+|[^\w\s]+")
    assert "".join(pre.with_regex_only().split(TEXT * 2000)) == TEXT * 2000


# ------------------------------------------------------------------- silent wrong results


def test_truncated_gpt2_merges_are_a_format_error(tmp_path, gpt2_tok):
    enc, bpe = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    gpt2_tok.to_gpt2(enc, bpe)
    lines = bpe.read_text().split("\n")
    for kept in (1, len(lines) // 2):  # only the version line; half of the merges
        bad = tmp_path / f"cut{kept}.bpe"
        bad.write_text("\n".join(lines[:kept]) + "\n")
        with pytest.raises(FormatError, match="no merge"):
            cybpe.Tokenizer.from_gpt2(enc, bad)
    bad.write_text("")
    with pytest.raises(FormatError, match="truncated"):
        cybpe.Tokenizer.from_gpt2(enc, bad)
    assert cybpe.Tokenizer.from_gpt2(enc, bpe).encode("Hello world") == gpt2_tok.encode("Hello world")


def test_gpt2_added_tokens_still_load(tmp_path, gpt2_tok):
    enc, bpe = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    gpt2_tok.to_gpt2(enc, bpe)
    loaded = cybpe.Tokenizer.from_gpt2(enc, bpe)
    assert loaded.special_tokens == gpt2_tok.special_tokens
    plain = cybpe.Tokenizer(cybpe.Vocab(gpt2_tok.vocab.tokens, gpt2_tok.vocab.merges, {"eot": 400}, True, True), "gpt2")
    with pytest.raises(FormatError, match="read back as an ordinary token"):
        plain.to_gpt2(tmp_path / "e2.json", tmp_path / "v2.bpe")


def test_empty_and_bare_string_special_tokens_are_refused():
    for special_tokens in ([""], ["ok", ""], "<|eot|>", b"<|eot|>", [None], ["a\ud800"], 5):
        with pytest.raises(InvalidParameterError):
            cybpe.ChunkCounts("cl100k", special_tokens)
        with pytest.raises(InvalidParameterError):
            cybpe.train(["some text"], 300, special_tokens=special_tokens, progress=False)
    with pytest.raises(ParameterTypeError, match=r"\['<\|eot\|>'\]"):
        cybpe.ChunkCounts("cl100k", "<|eot|>")
    assert cybpe.ChunkCounts("cl100k", ["<|eot|>"]).special_tokens == ("<|eot|>",)


class Sneaky(str):
    def encode(self, *args, **kwargs):  # type: ignore[override]
        return b"EVIL"

    def __iter__(self):  # type: ignore[override]
        return iter("EVIL")


def test_str_subclasses_are_read_by_their_code_points(tok):
    text = "hello world " * 3
    evil = Sneaky(text)
    expected = tok.encode(text)
    assert tok.encode(evil) == expected
    assert tok.encode_ordinary(evil) == expected
    assert list(tok.encode_to_numpy(evil)) == expected
    assert tok.count(evil) == len(expected)
    assert tok.encode_batch([evil, evil], num_threads=2) == [expected, expected]
    assert tok.encode_ordinary_batch([evil, evil], num_threads=2) == [expected, expected]
    assert tok.encode_ordinary_batch([evil], num_threads=1) == [expected]
    pre = cybpe.get_pretokenizer("cl100k")
    assert pre.split(evil) == pre.split(text) and pre.split_spans(evil) == pre.split_spans(text)
    counts = cybpe.ChunkCounts("cl100k").update([evil])
    assert counts == cybpe.ChunkCounts("cl100k").update([text])
    with_specials = cybpe.ChunkCounts("cl100k", ["<|eot|>"]).update([evil, Sneaky("a<|eot|>b")])
    assert with_specials == cybpe.ChunkCounts("cl100k", ["<|eot|>"]).update([text, "a<|eot|>b"])


def test_save_writes_through_symlinks(tmp_path, tok):
    other = cybpe.train(["a completely different corpus " * 10], 280, progress=False)
    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    tok.save(real)
    link.symlink_to(real)
    other.save(link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert cybpe.Tokenizer.load(real) == other
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "target.tiktoken").write_bytes(b"old")
    (tmp_path / "rel.tiktoken").symlink_to("sub/target.tiktoken")
    other.to_tiktoken(tmp_path / "rel.tiktoken")
    assert (tmp_path / "rel.tiktoken").is_symlink()
    assert (sub / "target.tiktoken").read_bytes() != b"old"
    assert sorted(p.name for p in sub.iterdir()) == ["target.tiktoken"]  # no temporary left


def test_save_refuses_non_regular_destinations(tmp_path, tok):
    with pytest.raises(SaveError, match="directory"):
        tok.save(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SaveError, match="not a regular file"):
        tok.save(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    if os.path.exists("/dev/null"):
        with pytest.raises(SaveError, match="not a regular file"):
            cybpe.ChunkCounts("cl100k").save("/dev/null")
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_non_integer_ids_and_counts_are_refused(tok):
    counts = cybpe.ChunkCounts("cl100k")
    for bad in ({5: 1}, {"x": 1.9}, {"x": True}, {"x": "3"}, {None: 1}, [("x",)], "xy", {"x": -1}):
        with pytest.raises(InvalidParameterError):
            counts.add_counts(bad)
    with pytest.raises(TooLargeError):
        counts.add_counts({"x": 2**63})
    assert len(counts) == 0 and counts.total == 0  # nothing was half-added
    counts.add_counts({"x": 2, b"y": 3})
    assert dict(counts.items()) == {b"x": 2, b"y": 3}
    for call in (tok.decode_single_token_bytes, tok.token_bytes):
        with pytest.raises(InvalidTokenError):
            call(5.7)
        assert call(5) == tok.decode_bytes([5])
    with pytest.raises(InvalidTokenError):
        tok.decode_tokens_bytes([1, 2.5])
    with pytest.raises(InvalidTokenError):
        tok.decode([1.0, 2.0])


# -------------------------------------------------------------------------- untyped errors


def _deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


def test_deeply_nested_json_is_a_format_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(_deep_json())
    for load in (cybpe.Tokenizer.load, cybpe.Tokenizer.from_hf, cybpe.ChunkCounts.load):
        with pytest.raises(FormatError, match="nested too deeply"):
            load(path)
    path.write_text('{"format": "cybpe-tokenizer", "version": 1, "metadata": ' + _deep_json(50_000) + "}")
    with pytest.raises(FormatError):
        cybpe.Tokenizer.load(path)


def test_special_ids_of_2_to_the_32_are_refused(tok):
    for special_id in (2**32, 2**32 - 1, 2**40, 2**64):
        vocab = cybpe.Vocab(tok.vocab.tokens, tok.vocab.merges, {"<x>": special_id}, True, True)
        with pytest.raises(FormatError, match="32-bit"):
            cybpe.Tokenizer(vocab)
    top = cybpe.Tokenizer(cybpe.Vocab(tok.vocab.tokens, tok.vocab.merges, {"<x>": 2**32 - 2}, True, True))
    assert top.encode("<x>", allowed_special="all") == [2**32 - 2]
    assert top.decode([2**32 - 2]) == "<x>"


def test_wrong_types_in_a_native_file_are_format_errors(tmp_path, tok):
    path = tmp_path / "tok.json"
    tok.save(path)
    doc = json.loads(path.read_text())
    for field, value in (("name", ["x"]), ("name", {"a": 1}), ("params", ["x"]), ("params", 5)):
        broken = json.loads(json.dumps(doc))
        broken["pretokenizer"][field] = value
        path.write_text(json.dumps(broken))
        with pytest.raises(FormatError):
            cybpe.Tokenizer.load(path)


def test_pickles_are_versioned(tok):
    counts = cybpe.ChunkCounts("cl100k", ["<|eot|>"]).update([TEXT])
    from cybpe.api.tokenizer import STATE_VERSION as TOKENIZER_STATE
    from cybpe.training.counts import STATE_VERSION as COUNTS_STATE

    for obj, current in ((tok, TOKENIZER_STATE), (counts, COUNTS_STATE)):
        state = obj.__getstate__()
        assert state["state_version"] == current
        assert pickle.loads(pickle.dumps(obj)) == obj
        newer = dict(state, state_version=current + 1)
        with pytest.raises(FormatError, match="newer cybpe"):
            type(obj).__new__(type(obj)).__setstate__(newer)
        with pytest.raises(FormatError):
            type(obj).__new__(type(obj)).__setstate__({"something": "else"})
    # the state of the previous version (no state_version, counts as a dict) still loads
    old = {"spec": counts.pretokenizer.spec(), "special_tokens": ("<|eot|>",),
           "counts": {c.decode(): n for c, n in counts.items()}}
    restored = cybpe.ChunkCounts.__new__(cybpe.ChunkCounts)
    restored.__setstate__(old)
    assert restored == counts


def test_chunk_counts_load_errors_name_the_file(tmp_path):
    with pytest.raises(FormatError, match=str(tmp_path)):
        cybpe.ChunkCounts.load(tmp_path)  # a directory
    locked = tmp_path / "locked.json"
    cybpe.ChunkCounts("cl100k").update([TEXT]).save(locked)
    if os.geteuid() != 0:
        locked.chmod(0)
        with pytest.raises(FormatError, match="locked.json"):
            cybpe.ChunkCounts.load(locked)


def test_save_errors_name_the_destination(tmp_path, tok, gpt2_tok):
    missing = tmp_path / "no-such-folder" / "tok.json"
    savers = [tok.save, tok.to_tiktoken, tok.to_hf, cybpe.ChunkCounts("cl100k").save,
              lambda p: gpt2_tok.to_gpt2(p, tmp_path / "no-such-folder" / "vocab.bpe")]
    for save in savers:
        with pytest.raises(SaveError) as caught:
            save(missing)
        message = str(caught.value)
        assert "no-such-folder" in message and ".cybpe-tmp" not in message and ".tmp" not in message
        assert isinstance(caught.value, OSError)


def test_untyped_argument_errors_of_the_review(tok):
    cases = [
        lambda: tok.encode_batch(["a", "b"], num_threads="4"),
        lambda: tok.encode_batch(["a", "b"], num_threads=2.0),
        lambda: tok.encode_ordinary_batch(["a", "b"], num_threads="4"),
        lambda: tok.encode("a", allowed_special=None),
        lambda: tok.encode("a", disallowed_special=None),
        lambda: tok.encode("a", allowed_special="<|eot|>"),
        lambda: tok.encode_single_token(5),
        lambda: tok.encode_single_token("a\ud800"),
        lambda: cybpe.train(["abc"], 300, special_tokens=["\ud800"], progress=False),
        lambda: cybpe.train(["abc"], 300, min_frequency="5", progress=False),
        lambda: cybpe.train(["abc"], 300, workers="2", progress=False),
        lambda: cybpe.train(5, 300, progress=False),
        lambda: tok.decode([[1], [2, 3]]),
        lambda: cybpe.get_pretokenizer(["cl100k"]),
        lambda: cybpe.get_pretokenizer({"a": 1}),
        lambda: cybpe.bits_per_byte("x", 1.0),
        lambda: cybpe.files(5),
        lambda: cybpe.hookimpl(5),
    ]
    for case in cases:
        with pytest.raises(CybpeError):
            case()
    with pytest.raises(TypeError):  # the typed errors for a wrong type are TypeErrors too
        tok.encode_batch(["a"], num_threads="4")


def test_encode_ordinary_batch_of_str_subclasses_has_no_stop_iteration(tok):
    assert tok.encode_ordinary_batch([Sneaky("ab"), "cd"]) == [tok.encode("ab"), tok.encode("cd")]
    with pytest.raises(EncodingError):
        tok.encode_ordinary_batch(["ab", b"cd"])


def test_tiktoken_error_keeps_its_reason_when_the_path_says_line(tmp_path):
    folder = tmp_path / "pipeline-files"
    folder.mkdir()
    path = folder / "offline.tiktoken"
    path.write_bytes(b"IQ== 0\nIg== 1\n")  # well-formed lines, but not every single byte
    with pytest.raises(FormatError, match="single bytes"):
        cybpe.Tokenizer.from_tiktoken(path, "cl100k")


def test_later_saves_remove_stale_temporaries_of_killed_saves(tmp_path, tok):
    from cybpe.io import atomic as _atomic

    target = tmp_path / "tok.json"
    dead_pid = 2**22 + 12345  # above the default pid_max: no such process
    stale = tmp_path / f".tok.json.{dead_pid}.deadbeef{_atomic.TEMP_SUFFIX}"
    live = tmp_path / f".tok.json.{os.getpid()}.cafef00d{_atomic.TEMP_SUFFIX}"
    recent = tmp_path / f".tok.json.{dead_pid}.0badf00d{_atomic.TEMP_SUFFIX}"
    foreign = tmp_path / ".tok.json.unrelated.tmp"
    for path in (stale, live, recent, foreign):
        path.write_bytes(b"partial")
    old = time.time() - 3600
    for path in (stale, live, foreign):
        os.utime(path, (old, old))
    tok.save(target)
    assert not stale.exists()  # a killed save's leftover
    assert live.exists() and recent.exists() and foreign.exists()  # in progress, or not ours
    assert cybpe.Tokenizer.load(target) == tok
