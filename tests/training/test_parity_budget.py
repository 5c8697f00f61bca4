"""Budgeted parity-aware BPE (``cybpe/training/parity_budget.py``, compiled loop) against its
recount-everything reference (``cybpe/reference/parity_budget.py``), and the budget's promises."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.errors import InvalidParameterError
from cybpe.reference.parity_budget import reference_budget_parity_merges
from cybpe.training.parity import tie_key_for, train_parity_merges
from cybpe.training.parity_budget import (budget_limits, budgeted_parity_merges, dev_length_trajectory,
                                          train_parity_budget)
from support import PARITY_FIELDS, counted, examples, udhr_texts

UDHR = udhr_texts()


def assert_same(train, dev, n_new, **options):
    tie_break = options.pop("tie_break", "ids")
    fast, fast_p = budgeted_parity_merges(train, dev, n_new, tie_break=tie_break, **options)
    slow, slow_p = reference_budget_parity_merges(train, dev, n_new, tie_key=tie_key_for(tie_break), **options)
    assert fast_p == slow_p
    for name in PARITY_FIELDS:
        assert getattr(fast, name) == getattr(slow, name), name
    return fast, fast_p


def udhr(langs, lines=(0, 30), dev=(30, 45)):
    split = {l: UDHR[l].splitlines() for l in langs}
    train = [counted("\n".join(split[l][lines[0]:lines[1]])) for l in langs]
    dev = [counted("\n".join(split[l][dev[0]:dev[1]])) for l in langs]
    return train, dev


@pytest.mark.parametrize("options", [{"budget": 0.0}, {"budget": 0.05}, {"budget": 0.02, "fallback": "protected"},
                                     {"budget": 0.03, "window": 5, "alpha": 1.0},
                                     {"budget": 0.01, "global_merges": 10, "tie_break": "huggingface"},
                                     {"budget": 0.02, "max_token_length": 4, "min_frequency": 2}])
def test_udhr_equals_reference(options):
    train, dev = udhr(["en", "hi", "th", "ru"])
    result, trajectory = assert_same(train, dev, 60, protect=0, **options)
    assert len(trajectory) >= 2 and trajectory == sorted(trajectory, reverse=True)


def test_the_budget_decides_between_parity_and_global_merges():
    train, dev = udhr(["en", "hi", "th", "ru"])
    n = 80
    plain = train_parity_merges(train, dev, n, global_merges=2**62)
    classic = train_parity_merges(train, dev, n)
    # an infinite budget is classic parity; a budget of 0 keeps English at plain BPE's length
    loose, _ = budgeted_parity_merges(train, dev, n, protect=0, budget=1e9)
    assert loose.merges == classic.merges and loose.chosen == classic.chosen
    tight, trajectory = budgeted_parity_merges(train, dev, n, protect=0, budget=0.0)
    lengths = dev_length_trajectory(dev[0], tight.merges, tight.new_ids)
    assert lengths[-1] == tight.dev_lengths[0] and lengths[0] == trajectory[0]
    # every merge made while English was over its limit is a summed-count merge, every other one
    # a parity choice
    limits = budget_limits(trajectory, 0.0)
    for k, lang in enumerate(tight.chosen):
        over = lengths[k] > limits[min(k, len(limits) - 1)]
        assert (lang == -1) == over, k
    assert -1 in tight.chosen and set(tight.chosen) - {-1}
    assert max(tight.dev_lengths) < max(plain.dev_lengths)  # the worst-off language gained
    # the protected fallback: English's own best pairs while over the limit
    own, _ = budgeted_parity_merges(train, dev, n, protect=0, budget=0.0, fallback="protected")
    lengths = dev_length_trajectory(dev[0], own.merges, own.new_ids)
    parity_langs = set()
    for k, lang in enumerate(own.chosen):
        over = lengths[k] > limits[min(k, len(limits) - 1)]
        assert lang != -1 and (not over or lang == 0), k
        parity_langs.add(lang)
    assert parity_langs - {0}
    assert own.dev_lengths[0] < tight.dev_lengths[0]  # the summed counts favour the byte-heavy scripts


def test_trajectory_is_the_replay_of_each_prefix():
    train, dev = udhr(["en", "hi"])
    plain = train_parity_merges(train, dev, 40, global_merges=2**62)
    trajectory = dev_length_trajectory(dev[0], plain.merges, plain.new_ids)
    assert trajectory[0] == plain.dev_lengths_start[0] and trajectory[-1] == plain.dev_lengths[0]
    for k in (0, 7, 25, 40):  # plain BPE with the first k merges only
        prefix = train_parity_merges(train, dev, k, global_merges=2**62)
        assert trajectory[len(prefix.merges)] == prefix.dev_lengths[0]


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.text(alphabet="aab c\u00e9\u0915\u093f", max_size=12), min_size=2, max_size=4),
       st.integers(0, 25), st.sampled_from([0.0, 0.01, 0.1, 0.5]), st.sampled_from(["global", "protected"]),
       st.sampled_from([None, 2]), st.integers(0, 3))
def test_random_equals_reference(texts, n_new, budget, fallback, window, global_merges):
    train = [counted(t * 3) if t.strip() else ([], []) for t in texts]
    dev = [counted(t) if t.strip() else ([], []) for t in texts]
    assert_same(train, dev, n_new, protect=random.Random(len(texts)).randrange(len(texts)), budget=budget,
                fallback=fallback, window=window, global_merges=global_merges)


def test_bad_arguments():
    train, dev = udhr(["en", "hi"])
    for bad in ({"budget": -0.1}, {"budget": float("nan")}, {"budget": True}, {"fallback": "english"},
                {"protect": 2}, {"protect": -1}):
        options = {"protect": 0, "budget": 0.02, **bad}
        with pytest.raises(InvalidParameterError):
            budgeted_parity_merges(train, dev, 10, **options)


def test_train_parity_budget_builds_a_tokenizer():
    langs = ["en", "hi", "th"]
    corpus = {l: ["\n".join(UDHR[l].splitlines()[:40])] for l in langs}
    dev = cybpe.ParallelSet({l: "\n".join(UDHR[l].splitlines()[40:52]) for l in langs})
    tok = train_parity_budget(corpus, 400, dev, budget=0.02)
    report = tok.metadata["training"]["parity"]
    assert report["protect"] == "en" and report["budget"] == 0.02
    assert report["budget_merges"] > 0 and sum(report["merges_per_language"].values()) > 0
    assert report["protected_dev_tokens"] == tok.count(dev.texts["en"]) or report["protected_dev_tokens"] > 0
    text = UDHR["hi"][:500]
    assert tok.decode(tok.encode(text)) == text
    # the same as the merge loop on the same counts
    assert cybpe.train_parity_budget is train_parity_budget
    with pytest.raises(InvalidParameterError):
        train_parity_budget(corpus, 400, dev, protect="fr")


@pytest.mark.slow
@pytest.mark.parametrize("options", [{"budget": 0.0}, {"budget": 0.0, "fallback": "protected"},
                                     {"budget": 0.05, "window": 20, "alpha": 2.0, "tie_break": "huggingface"}])
def test_ntrex_equals_reference(shared_dir, options):
    langs = ["en", "my", "hi", "ja", "ta", "ar", "km", "ru"]
    root = shared_dir / "corpora/eval/parallel-ntrex"
    lines = {l: (root / f"{l}.txt").read_text(encoding="utf-8").splitlines() for l in langs}
    train = [counted("\n".join(lines[l][100:140])) for l in langs]
    dev = [counted("\n".join(lines[l][0:20])) for l in langs]
    result, _ = assert_same(train, dev, 100, protect=0, **options)
    assert len(result.merges) == 100
    if options["budget"] == 0.0:  # English is kept at plain BPE's length: the budget merges happen
        assert (-1 if options.get("fallback", "global") == "global" else 0) in result.chosen
