"""train()'s modes as option objects (SuperBPE, Prune, ParallelSet): each equals its keyword
form, two modes are refused, return_counts is deprecated, and train() stays a small dispatcher."""

from __future__ import annotations

import inspect
import warnings

import pytest

import cybpe
from cybpe.errors import InvalidParameterError, ParameterTypeError
from support import UDHR_DIR

TEXTS = [p.read_text(encoding="utf-8")[:20000] for p in sorted(UDHR_DIR.glob("*.txt"))[:3]]


def _same(a: cybpe.Tokenizer, b: cybpe.Tokenizer) -> None:
    assert a.vocab == b.vocab and a.pretokenizer == b.pretokenizer
    ra, rb = a.metadata["training"], b.metadata["training"]
    for key in ("stop_reason", "n_merges", "merge_counts", "merge_veto", "pruned", "superword_from"):
        assert ra.get(key) == rb.get(key), key


def test_superbpe_object_equals_the_keywords():
    old = cybpe.train(TEXTS, 700, superword_from=500, progress=False)
    new = cybpe.train(TEXTS, 700, mode=cybpe.SuperBPE(from_=500), progress=False)
    _same(old, new)
    assert new.metadata["training"]["superword_from"] == 500
    assert len(new.metadata["training"]["stages"]) == 2


def test_prune_object_equals_the_keyword():
    old = cybpe.train(TEXTS, 600, prune_exposure=4, progress=False)
    new = cybpe.train(TEXTS, 600, mode=cybpe.Prune(exposure=4), progress=False)
    _same(old, new)
    assert new.metadata["training"]["pruned"]["min_exposure"] == 4


def test_parallel_set_as_mode_equals_parity():
    dev = {"a": "one two\nthree", "b": "un deux\ntrois"}
    corpus = {"a": TEXTS[:1], "b": TEXTS[1:2]}
    old = cybpe.train(corpus, 400, parity=cybpe.ParallelSet(dev), progress=False)
    new = cybpe.train(corpus, 400, mode=cybpe.ParallelSet(dev), progress=False)
    _same(old, new)
    assert new.metadata["training"]["parity"]["languages"] == ["a", "b"]


@pytest.mark.parametrize("extra", [dict(superword_from=400), dict(prune_exposure=2),
                                   dict(parity=cybpe.ParallelSet({"a": "x"}))])
def test_two_modes_are_refused(extra):
    with pytest.raises(InvalidParameterError, match="exclude each other"):
        cybpe.train(TEXTS, 600, mode=cybpe.Prune(exposure=3), progress=False, **extra)


def test_bad_option_objects_are_typed():
    with pytest.raises(InvalidParameterError):
        cybpe.SuperBPE(from_=100)
    with pytest.raises(ParameterTypeError):
        cybpe.SuperBPE(from_="300")
    with pytest.raises(InvalidParameterError):
        cybpe.Prune(exposure=0)
    with pytest.raises(ParameterTypeError):
        cybpe.Prune(exposure=2.5)
    with pytest.raises(ParameterTypeError, match="mode"):
        cybpe.train(TEXTS, 600, mode="superbpe", progress=False)
    tok = cybpe.train(TEXTS, 300, progress=False)
    for mode in (cybpe.Prune(exposure=2), cybpe.ParallelSet({"a": "x"})):
        with pytest.raises(InvalidParameterError, match="base="):
            cybpe.train(TEXTS, 600, mode=mode, base=tok, progress=False)


def test_return_counts_still_works_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="cybpe.count"):
        tok, counts = cybpe.train(TEXTS, 300, return_counts=True, progress=False)
    assert isinstance(counts, cybpe.ChunkCounts)
    assert cybpe.train(counts, 300, progress=False).vocab == tok.vocab
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning without the flag
        assert isinstance(cybpe.train(TEXTS, 300, progress=False), cybpe.Tokenizer)
    with pytest.raises(InvalidParameterError, match="return_counts"):
        with pytest.warns(DeprecationWarning):
            cybpe.train(TEXTS, 600, mode=cybpe.SuperBPE(from_=400), return_counts=True, progress=False)


def test_train_is_a_small_dispatcher():
    lines = inspect.getsource(cybpe.train).splitlines()
    assert len(lines) <= 60, len(lines)
