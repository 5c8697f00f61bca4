"""Counting a batch through a scratch table (then merging it) gives what counting straight into
the big table gives: the same counts, the same total and the same first-seen order; and the
choice between the two follows the batches' repeats (ChunkCounts._add_texts_compiled)."""

from __future__ import annotations

import random

import pytest

import cybpe
import cybpe.training.counts as counts_module
from support import eval_texts, shared_path


def _letters(i: int) -> str:
    """A distinct 5-letter word per i < 26**5 (cl100k cuts digits into threes: words must be letters)."""
    word = ""
    for _ in range(5):
        i, r = divmod(i, 26)
        word += chr(97 + r)
    return word


def _distinct(k: int, n: int = 20_000) -> str:
    return " ".join(_letters(i) for i in range(k * n, (k + 1) * n))


def _batches() -> list[list[str]]:
    """Repetitive batches, then all-new ones, then repetitive again, with hostile text mixed in."""
    rng = random.Random(7)
    shared = shared_path()
    real = [text for _, text in eval_texts(shared, 400_000)] if shared is not None else []
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    repetitive = [" ".join(rng.choice(words) for _ in range(4000)) + "\n" for _ in range(6)]
    distinct = [_distinct(k) for k in range(3)]
    hostile = ["\u0000\ufeff  \r\n\t\u200d👍🏽 x'll 123456 ⁂ \U0010FFFF" * 50, "é" * 5000, " " * 3000]
    batches = [[t] for t in real] + [repetitive[:3], distinct[:1], distinct[1:], repetitive[3:], hostile]
    return batches + [[t] for t in real[::-1]] + [repetitive[:2]]


def _count(batches, scratch_from: int, monkeypatch, pretokenizer="cl100k"):
    monkeypatch.setattr(counts_module, "SCRATCH_FROM", scratch_from)
    made = []
    real = counts_module.ChunkCounter

    def counter(*args):
        made.append(1)
        return real(*args)

    monkeypatch.setattr(counts_module, "ChunkCounter", counter)
    counts = cybpe.ChunkCounts(pretokenizer)
    decisions = []
    for batch in batches:
        counts.update(batch)
        decisions.append(counts._scratch_pays)
    monkeypatch.setattr(counts_module, "ChunkCounter", real)
    return counts, len(made) - 1, decisions  # one counter is the table itself


@pytest.mark.parametrize("pretokenizer", ["cl100k", "gpt2", "o200k"])
def test_scratch_tables_count_exactly_like_one_table(monkeypatch, pretokenizer):
    batches = _batches()
    direct, none_made, _ = _count(batches, 1 << 62, monkeypatch, pretokenizer)
    scratch, made, decisions = _count(batches, 0, monkeypatch, pretokenizer)
    assert none_made == 0
    assert made > 0  # the scratch path ran
    assert False in decisions and decisions[-1] is True  # all-new batches switch it off, repeats back on
    assert scratch == direct
    assert scratch.table.items() == direct.table.items()  # first-seen order too
    assert scratch.total == direct.total
    assert cybpe.train(scratch, 300).vocab.tokens == cybpe.train(direct, 300).vocab.tokens


def test_all_new_batches_go_straight_into_the_table(monkeypatch):
    distinct = [[_distinct(k)] for k in range(4)]
    _, made, decisions = _count(distinct, 0, monkeypatch)
    assert made == 1  # the first batch tried a scratch table; its chunks were all new
    assert decisions == [False] * 4
