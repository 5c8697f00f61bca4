"""Counting a batch through a scratch table (then merging it) gives what counting straight into
the big table gives: the same counts, the same total and the same first-seen order; and the
choice between the two follows the batches' repeats (ChunkCounts._add_texts_compiled)."""

from __future__ import annotations

import random

import pytest

import cybpe
import cybpe.training.counts as counts_module
from support import DATA_DIR, UDHR_DIR, eval_texts, shared_path


def _letters(i: int) -> str:
    """A distinct 5-letter word per i < 26**5 (cl100k cuts digits into threes: words must be letters)."""
    word = ""
    for _ in range(5):
        i, r = divmod(i, 26)
        word += chr(97 + r)
    return word


def _distinct(k: int, n: int = 20_000) -> str:
    return " ".join(_letters(i) for i in range(k * n, (k + 1) * n))


def _real_texts() -> list[str]:
    """Real documents: the shared evaluation files when present, else the samples a clone has
    (the bundled UDHR translations and tests/data/python_sample.txt)."""
    shared = shared_path()
    if shared is not None:
        return [text for _, text in eval_texts(shared, 400_000)]
    files = sorted(UDHR_DIR.glob("*.txt")) + [DATA_DIR / "python_sample.txt"]
    return [f.read_text(encoding="utf-8") for f in files]


def _batches() -> list[tuple[str, list[str]]]:
    """(kind, batch): real texts; a repetitive batch, two all-new ones, two repetitive ones,
    hostile text; the real texts again; a repetitive batch last.

    A repetitive batch draws 4000 words per text from 200, so each distinct chunk occurs about
    twenty times per text: well above SCRATCH_REPEATS whether the batch is counted through a
    scratch table (occurrences per distinct chunk) or straight (per new chunk)."""
    rng = random.Random(7)
    real = _real_texts()
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 9))) for _ in range(200)]
    repetitive = [" ".join(rng.choice(words) for _ in range(4000)) + "\n" for _ in range(6)]
    distinct = [_distinct(k) for k in range(3)]
    hostile = ["\u0000\ufeff  \r\n\t\u200d👍🏽 x'll 123456 ⁂ \U0010FFFF" * 50, "é" * 5000, " " * 3000]
    return ([("real", [t]) for t in real]
            + [("repetitive", repetitive[:3]), ("distinct", distinct[:1]), ("distinct", distinct[1:]),
               ("repetitive", repetitive[3:5]), ("repetitive", repetitive[5:]), ("hostile", hostile)]
            + [("real", [t]) for t in real[::-1]] + [("repetitive", repetitive[:2])])


def _count(batches, scratch_from: int, monkeypatch, pretokenizer="cl100k"):
    monkeypatch.setattr(counts_module, "SCRATCH_FROM", scratch_from)
    made = []
    real = counts_module.ChunkCounter

    def counter(*args):
        made.append(1)
        return real(*args)

    monkeypatch.setattr(counts_module, "ChunkCounter", counter)
    counts = cybpe.ChunkCounts(pretokenizer)
    decisions, through_scratch = [], []
    for batch in batches:
        before = len(made)
        counts.update(batch)
        decisions.append(counts._scratch_pays)
        through_scratch.append(len(made) > before)
    monkeypatch.setattr(counts_module, "ChunkCounter", real)
    # one counter is the table itself; the lists: each batch's decision, and whether it went
    # through a scratch table
    return counts, len(made) - 1, decisions, through_scratch


@pytest.mark.parametrize("pretokenizer", ["cl100k", "gpt2", "o200k"])
def test_scratch_tables_count_exactly_like_one_table(monkeypatch, pretokenizer):
    kinds, batches = zip(*_batches())
    direct, none_made, _, _ = _count(batches, 1 << 62, monkeypatch, pretokenizer)
    scratch, made, decisions, through_scratch = _count(batches, 0, monkeypatch, pretokenizer)
    assert none_made == 0
    assert made > 0  # the scratch path ran
    # All-new batches switch the scratch path off (the first one counted through a scratch
    # table, the second straight); the repetitive batch after them, counted straight, switches
    # it back on, and the next one, through a scratch table, keeps it on.
    picked = [(d, s) for k, d, s in zip(kinds, decisions, through_scratch) if k in ("distinct", "repetitive")]
    assert picked[1:5] == [(False, True), (False, False), (True, False), (True, True)]
    assert [d for k, d in zip(kinds, decisions) if k == "repetitive"] == [True] * 4
    assert scratch == direct
    assert scratch.table.items() == direct.table.items()  # first-seen order too
    assert scratch.total == direct.total
    assert cybpe.train(scratch, 300).vocab.tokens == cybpe.train(direct, 300).vocab.tokens


def test_all_new_batches_go_straight_into_the_table(monkeypatch):
    distinct = [[_distinct(k)] for k in range(4)]
    _, made, decisions, _ = _count(distinct, 0, monkeypatch)
    assert made == 1  # the first batch tried a scratch table; its chunks were all new
    assert decisions == [False] * 4
