"""The merge trainer's memory: flat-array input (no bytes per chunk) and tables sized from what
a step can really create, with the merges unchanged."""

from __future__ import annotations

import random

import numpy as np
import pytest

import cybpe
from cybpe.training.trainer import (_MergeTrainer, train_merges, train_merges_arrays,
                                    train_merges_from)
from cybpe.errors import InvalidParameterError

FIELDS = ("merges", "new_ids", "counts", "token_bytes", "stop_reason")


@pytest.fixture(scope="module")
def training_text(shared_dir):
    """The first 1.5 M characters of the shared training corpus (many languages)."""
    import lzma

    path = shared_dir / "corpora" / "train" / "mixed-train.txt.xz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return f.read(1_500_000)


def flat(chunks, weights):
    """(arena, offsets, weights) arrays holding ``chunks`` back to back."""
    offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(c) for c in chunks])
    return (np.frombuffer(b"".join(chunks), dtype=np.uint8), offsets,
            np.asarray(weights, dtype=np.int64))


def distinct_words(n, letters=6):
    """`` aaaaaa``, `` aaaaab``, ...: ``n`` distinct chunks sharing few pairs (the scale corpus)."""
    out = []
    for k in range(n):
        word = []
        for _ in range(letters):
            k, r = divmod(k, 26)
            word.append(chr(ord("a") + r))
        out.append((" " + "".join(reversed(word))).encode("ascii"))
    return out


@pytest.mark.parametrize("options", [{}, {"tie_break": "huggingface"}, {"max_token_length": 4},
                                     {"min_frequency": 3}])
def test_flat_arrays_give_the_merges_of_the_list_in_any_order(training_text, options):
    import regex

    words = regex.findall(r" ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+", training_text)
    counts = {}
    for w in words:
        counts[w.encode("utf-8")] = counts.get(w.encode("utf-8"), 0) + 1
    chunks, weights = list(counts), list(counts.values())
    expected = train_merges(chunks, weights, 600, **options)
    order = list(range(len(chunks)))
    random.Random(7).shuffle(order)
    shuffled = [chunks[i] for i in order], [weights[i] for i in order]
    got = train_merges_arrays(*flat(*shuffled), 600, **options)
    for field in FIELDS:
        assert getattr(got, field) == getattr(expected, field), field


def test_flat_arrays_take_one_byte_chunks_and_refuse_bad_input():
    chunks, weights = [b"a", b"ab", b"", b"abab", b"b"], [5, 2, 1, 3, 9]
    got = train_merges_arrays(*flat(chunks, weights), 10)
    assert got.merges == train_merges(chunks, weights, 10).merges
    arena, offsets, w = flat(chunks, weights)
    with pytest.raises(InvalidParameterError, match="weight"):
        train_merges_arrays(arena, offsets, np.array([5, 2, 0, 3, 9], dtype=np.int64), 10)
    with pytest.raises(InvalidParameterError, match="offsets"):
        train_merges_arrays(arena, offsets[:-1], w, 10)
    with pytest.raises(InvalidParameterError, match="offsets"):
        train_merges_arrays(arena[:-1], offsets, w, 10)
    bad = offsets.copy()
    bad[2] = bad[3] + 1
    with pytest.raises(InvalidParameterError, match="decrease"):
        train_merges_arrays(arena, bad, w, 10)


def test_train_from_counts_reads_the_arrays_and_keeps_the_merges(training_text):
    counts = cybpe.count([training_text[:400_000]])
    chunks, weights = counts.sorted_arrays()
    tok = cybpe.train(counts, 256 + 500)
    assert tok.vocab.merges == [tuple(m) for m in train_merges(chunks, weights, 500).merges]


def test_pair_table_grows_with_the_pairs_not_with_the_merge_sites():
    # 200k distinct words share at most 27 * 27 letter pairs, but the first merge (" a") has a
    # site in every chunk: reserving two new pairs per site made the table 2**20 slots.
    chunks = distinct_words(200_000)
    weights = np.ones(len(chunks), dtype=np.int64)
    trainer = _MergeTrainer()
    trainer.load(chunks, weights, list(range(256)), 300, 0, [])
    trainer.run(None)
    stats = trainer.stats()
    assert stats["sites"] > 200_000
    assert stats["pair_slots"] <= 1 << 15  # the old reservation: 2**20 slots (32 MiB)
    assert trainer.result().merges == train_merges(chunks, weights, 300).merges


def test_training_from_counts_lets_other_threads_use_them_while_merging(training_text):
    # train_merges_from copies what it needs while it holds the counts, then lets them go: an
    # update from another thread during the merges neither waits for the training nor changes it
    import threading

    counts = cybpe.count([training_text[:300_000]])
    chunks, weights = counts.sorted_arrays()
    finished = []

    def progress(done, total):
        if finished:
            return
        writer = threading.Thread(target=lambda: finished.append(counts.update(["more words"])),
                                  daemon=True)
        writer.start()
        writer.join(timeout=30)
        assert finished, "the update waited for the training"

    result = train_merges_from(counts.with_arrays, 600, progress=progress)
    assert finished and counts.total == sum(weights) + 2
    assert result.merges == train_merges(chunks, weights, 600).merges


def test_the_memory_pool_keeps_grows_frees_and_fails_cleanly():
    from cybpe.training.trainer import _exercise_mem_pool

    sizes = [1, 7, 64, 4096, 1 << 20, 3]
    seen = _exercise_mem_pool(sizes)
    # two bookkeeping blocks, then one per size; growing moves blocks but keeps their number
    assert seen["after_alloc"] == seen["after_grow"] == 2 + len(sizes)
    assert seen["after_free"] == 1 + len(sizes)
    assert seen["kept"] and seen["zeroed"] and seen["failed_cleanly"]


def _rss_bytes():
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc")
def test_runs_that_fail_half_way_free_everything():
    # Each run allocates ~4 MB of nodes, pair tables and occurrence lists, then fails: in the
    # veto (during the merges), or on a seed listed twice (after the token store). The pool frees
    # all of it with the trainer; a leak of one run's buffers would add ~1 GB over the loop.
    chunks = distinct_words(40_000)
    weights = np.ones(len(chunks), dtype=np.int64)

    def veto(left, right):
        raise KeyError("planted")

    def fail_once(kind):
        trainer = _MergeTrainer()
        if kind == "veto":
            trainer.load(chunks, weights, list(range(256)), 300, 0, [], 0, veto)
            assert trainer.stats()["mem_blocks"] > 10
            with pytest.raises(KeyError, match="planted"):
                trainer.run(None)
        else:
            with pytest.raises(InvalidParameterError, match="twice"):
                trainer.load(chunks, weights, list(range(256)), 300, 0, [b"ab", b"ab"])

    for kind in ("veto", "seed"):
        fail_once(kind)
    start = _rss_bytes()
    for k in range(200):
        fail_once("veto" if k % 2 else "seed")
    assert _rss_bytes() - start < 64 << 20
