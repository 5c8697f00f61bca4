"""The compiled parity merge loop (``cybpe/training/parity_merge.pyx``) against the recount-everything
reference (``cybpe/reference/parity.py``): real text, hostile text, the moving-window variant,
the merge rules and both tie rules."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError
from cybpe.reference.parity import reference_parity_merges
from cybpe.reference.trainer import _tie_key
from cybpe.training.parity import ParallelSet, train_parity_merges
from support import assert_same_parity as assert_same, examples
from support import counted, udhr_texts

UDHR = udhr_texts()

def ntrex(shared_dir, langs, train_lines, dev_lines):
    root = shared_dir / "corpora/eval/parallel-ntrex"
    lines = {l: (root / f"{l}.txt").read_text(encoding="utf-8").splitlines() for l in langs}
    train = [counted("\n".join(lines[l][train_lines[0]:train_lines[1]])) for l in langs]
    dev = [counted("\n".join(lines[l][dev_lines[0]:dev_lines[1]])) for l in langs]
    return train, dev


# -- real text --------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("tie_break", ["ids", "huggingface"])
@pytest.mark.parametrize("variant", [{}, {"global_merges": 40}, {"window": 20, "alpha": 2.0},
                                     {"window": 7, "alpha": 1.0, "global_merges": 10}])
def test_ntrex_equals_reference(shared_dir, tie_break, variant):
    langs = ["en", "my", "hi", "ja", "ta", "ar", "km", "ru"]
    train, dev = ntrex(shared_dir, langs, (100, 140), (0, 20))
    result = assert_same(train, dev, 100, tie_break=tie_break, **variant)
    assert len(result.merges) == 100 and len(set(result.chosen) - {-1}) >= 3


@pytest.mark.slow
def test_ntrex_rules_equal_reference(shared_dir):
    langs = ["en", "hi", "ja", "ko", "th"]
    train, dev = ntrex(shared_dir, langs, (100, 150), (0, 20))
    assert_same(train, dev, 100, max_token_length=3, tie_break="huggingface")
    assert_same(train, dev, 100, veto=lambda a, b: b" " in b or a.isdigit() != b.isdigit(),
                window=10, alpha=2.0)
    assert_same(train, dev, 100, min_frequency=4, global_merges=30)


# -- hostile text -----------------------------------------------------------------------------

def test_ties_everywhere():
    # every pair counts 1 in every language and every dev length is equal: only the tie rules
    # (smaller ids or HF order, the first language) decide
    rng = random.Random(7)
    letters = [bytes([b]) for b in rng.sample(range(256), 60)]
    chunks = [b"".join(letters[i:i + 3]) for i in range(0, 60, 3)]
    train = [(chunks[k::3], [1] * len(chunks[k::3])) for k in range(3)]
    dev = [([b"xyz"], [1])] * 3
    for tie_break in ("ids", "huggingface"):
        for options in ({}, {"window": 2, "alpha": 1.0}, {"global_merges": 5}):
            result = assert_same(train, dev, 60, tie_break=tie_break, **options)
            assert result.stop_reason == "no_pairs" and len(result.merges) == 40


def test_one_byte_chunks_empty_languages_and_a_language_without_pairs():
    one_byte = ([bytes([b]) for b in range(256)], [3] * 256)
    train = [one_byte, ([], []), ([b"abab", b"b", b"cab"], [2, 9, 1]), ([b"zz", b"z"], [5, 1])]
    dev = [([b"q" * 50], [1]), ([b"qqq"], [1]), ([], []), ([b"z"] * 3, [1, 2, 3])]
    result = assert_same(train, dev, 10)
    assert set(result.chosen) == {2, 3} and result.stop_reason == "no_pairs"
    # nothing has a pair at all
    assert assert_same([one_byte, ([], [])], [one_byte, ([], [])], 5).merges == []


def test_self_overlapping_runs_shared_chunks_and_dev_only_chunks():
    train = [([b"aaaaaaa", b"abababab", b"aaa"], [3, 2, 7]),
             ([b"aaaaaaa", b"bbbb", b"ba"], [1, 4, 4]),
             ([b"aaaaaaa", b"aaaaaaa"], [2, 5])]   # a chunk listed twice: the weights add up
    dev = [([b"aaaaaaaaaaa", b"bab"], [1, 2]), ([b"abba" * 5], [1]), ([b"cccc", b"aaaa"], [9, 1])]
    for tie_break in ("ids", "huggingface"):
        for options in ({}, {"global_merges": 2}, {"window": 1, "alpha": 1.0},
                        {"max_token_length": 3}):
            assert_same(train, dev, 12, tie_break=tie_break, **options)


def test_high_bytes_and_invalid_utf8_under_the_hf_order():
    rng = random.Random(3)
    train = [([bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) for _ in range(300)],
              [rng.randrange(1, 4) for _ in range(300)]) for _ in range(3)]
    dev = [([bytes(rng.randrange(120, 256) for _ in range(40))], [1]) for _ in range(3)]
    for tie_break in ("ids", "huggingface"):
        assert_same(train, dev, 60, tie_break=tie_break)
        assert_same(train, dev, 60, tie_break=tie_break, window=4, alpha=1.5, global_merges=9)


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(st.lists(st.text(alphabet="aab c\u00e9\u0915\u093f", max_size=12), min_size=0, max_size=5),
                min_size=1, max_size=4),
       st.integers(0, 4), st.integers(0, 30), st.sampled_from([None, 1, 2, 5]),
       st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from(["ids", "huggingface"]),
       st.sampled_from([None, 3]))
def test_random_equals_reference(texts, global_merges, n_new, window, alpha, tie_break, limit):
    train = [counted(" ".join(t)) if "".join(t) else ([], []) for t in texts]
    dev = [counted(t[0]) if t and t[0] else ([], []) for t in texts]
    assert_same(train, dev, n_new, global_merges=global_merges, window=window, alpha=alpha,
                tie_break=tie_break, max_token_length=limit)


# -- the moving-window variant ----------------------------------------------------------------

@pytest.mark.slow
def test_window_spreads_the_merges_and_keeps_each_choice_within_its_share(shared_dir):
    langs = ["en", "my", "hi", "ja", "km", "ru"]
    train, dev = ntrex(shared_dir, langs, (100, 200), (0, 30))
    classic = assert_same(train, dev, 120)
    windowed = assert_same(train, dev, 120, window=10, alpha=2.0)
    assert windowed.chosen != classic.chosen
    # the rule, checked on the trajectory: a language over its share (count * L > alpha * W) is
    # only chosen when every language within its share had no pair (never, on this text)
    for step, lang in enumerate(windowed.chosen):
        recent = windowed.chosen[max(0, step - 10):step]
        assert recent.count(lang) * len(langs) <= 2.0 * 10


def test_window_larger_than_the_run_and_alpha_above_l_are_the_classic_algorithm():
    langs = ["en", "hi", "zh-Hans", "ru"]
    train = [counted(UDHR[l][:2500]) for l in langs]
    dev = [counted(UDHR[l][2500:3000]) for l in langs]
    classic = train_parity_merges(train, dev, 50)
    assert train_parity_merges(train, dev, 50, window=100, alpha=4.0).merges == classic.merges
    assert train_parity_merges(train, dev, 50, window=1000, alpha=len(langs)).merges == classic.merges


def test_train_with_a_window_end_to_end():
    langs = ["en", "hi", "ar"]
    train_texts = {l: [UDHR[l][:4000]] for l in langs}
    dev = {l: "\n".join((UDHR[l][4000:6000].splitlines() + [""] * 8)[:8]) for l in langs}
    tok = cybpe.train(train_texts, 500, parity=ParallelSet(dev, window=12, alpha=1.5))
    report = tok.metadata["training"]["parity"]
    assert report["window"] == 12 and report["alpha"] == 1.5
    for lang in langs:
        assert len(tok.encode_ordinary(dev[lang])) == report["dev_tokens_after"][lang]
    counts = [cybpe.ChunkCounts("cl100k").update(train_texts[l]).sorted_arrays() for l in langs]
    devs = [cybpe.ChunkCounts("cl100k").update([dev[l]]).sorted_arrays() for l in langs]
    ref = reference_parity_merges(counts, devs, 500 - 256, tie_key=_tie_key("ids"), window=12, alpha=1.5)
    assert list(map(tuple, tok.vocab.merges)) == ref.merges


def test_window_settings_are_checked():
    for bad in ({"window": 0}, {"window": -3}, {"window": 2.5}, {"window": True},
                {"window": 5, "alpha": 0}, {"window": 5, "alpha": float("nan")},
                {"window": 5, "alpha": "2"}, {"window": 5, "alpha": float("inf")}):
        with pytest.raises(InvalidParameterError):
            ParallelSet({"en": "a"}, **bad)
        with pytest.raises(InvalidParameterError):
            train_parity_merges([([b"ab"], [1])], [([b"ab"], [1])], 1, **bad)
    assert "window=5" in repr(ParallelSet({"en": "a"}, window=5))


# -- rules, callbacks and bad input -------------------------------------------------------------

def test_the_veto_is_asked_once_per_pair_and_its_error_propagates():
    train = [counted(UDHR["en"][:3000]), counted(UDHR["ru"][:3000])]
    dev = [counted(UDHR["en"][3000:3500]), counted(UDHR["ru"][3000:3500])]
    asked = []

    def veto(left: bytes, right: bytes) -> bool:
        asked.append((left, right))
        return b" " in right

    result = assert_same(train, dev, 80, veto=lambda a, b: b" " in b)
    assert train_parity_merges(train, dev, 80, veto=veto).merges == result.merges
    assert asked and len(asked) == len(set(asked))
    assert all(b" " not in result.token_bytes[r] for _, r in result.merges)

    def broken(left: bytes, right: bytes) -> bool:
        raise KeyError("veto failed")

    with pytest.raises(KeyError, match="veto failed"):
        train_parity_merges(train, dev, 10, veto=broken)


def test_bad_input_is_refused():
    good = ([b"ab"], [1])
    with pytest.raises(ParameterTypeError):
        train_parity_merges([(["ab"], [1])], [good], 3)
    with pytest.raises(ParameterTypeError):
        train_parity_merges([good], [good], 3.0)
    with pytest.raises(InvalidParameterError):
        train_parity_merges([good], [good], 3, tie_break="alphabetical")
    with pytest.raises(InvalidParameterError):
        train_parity_merges([good], [good], 3, max_token_length=0)
    with pytest.raises(InvalidParameterError):
        train_parity_merges([([b"ab"], [0])], [good], 3)
    with pytest.raises(TrainingError, match="overflow"):
        train_parity_merges([([b"abc", b"ab"], [2**62, 2**62])], [good], 3)
    with pytest.raises(TrainingError, match="overflow"):
        train_parity_merges([good], [([b"ab"], [2**63])], 3)
