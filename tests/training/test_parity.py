"""Parity-aware BPE: the incremental trainer against the recount-everything reference, the paper's
invariants, ``train(parity=...)`` end to end and its exports."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.errors import InvalidParameterError, ParameterTypeError
from cybpe.reference.parity import reference_parity_merges
from cybpe.reference.trainer import _tie_key, reference_train_merges
from cybpe.training.parity import ParallelSet, train_parity_merges
from support import UDHR_DIR, assert_exports_agree, counted, examples
from support import assert_same_parity as assert_same

UDHR = {p.stem: p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))}


def udhr_split(langs, train_chars=3000, dev_chars=600):
    """Per language: training text (a prefix) and a dev text (what follows), from the UDHR sample."""
    train = [counted(UDHR[lang][:train_chars]) for lang in langs]
    dev = [counted(UDHR[lang][train_chars:train_chars + dev_chars]) for lang in langs]
    return train, dev


def test_hand_case_worst_language_is_served():
    # language 0 ("ab" text) is short on dev, language 1 ("xyz") long: the first merge serves 1.
    train = [([b"abab"], [5]), ([b"xyxy", b"zz"], [1, 1])]
    dev = [([b"ab"], [1]), ([b"xyxyxy"], [1])]
    result = assert_same(train, dev, 2)
    assert result.dev_lengths_start == [2, 6]
    # dev lengths 2, 6: language 1 serves, its best pair (x, y); then 2, 3: language 1 again, where
    # (xy, xy) and (z, z) both count 1 and the smaller ids win
    assert result.chosen == [1, 1] and result.merges == [(120, 121), (122, 122)]
    assert result.dev_lengths == [2, 3]


@pytest.mark.parametrize("tie_break", ["ids", "huggingface"])
@pytest.mark.parametrize("global_merges", [0, 7, 1000])
def test_equals_reference_on_udhr(tie_break, global_merges):
    langs = ["en", "hi", "zh-Hans", "ru", "ar"]
    train, dev = udhr_split([l for l in langs if l in UDHR])
    result = assert_same(train, dev, 60, tie_break=tie_break, global_merges=global_merges)
    assert len(result.merges) == 60


def test_rules_equal_reference():
    langs = ["en", "ta", "ja"]
    train, dev = udhr_split([l for l in langs if l in UDHR])
    assert_same(train, dev, 40, max_token_length=4)
    assert_same(train, dev, 40, veto=lambda a, b: b" " in a + b)
    assert_same(train, dev, 40, min_frequency=5)


def test_one_language_is_plain_bpe():
    chunks, weights = counted(UDHR["en"][:4000])
    dev = counted(UDHR["en"][4000:4500])
    parity = train_parity_merges([(chunks, weights)], [dev], 80)
    plain = reference_train_merges(chunks, weights, 80)
    assert parity.merges == plain.merges and parity.token_bytes == plain.token_bytes


def test_all_global_merges_is_plain_bpe_on_the_sum():
    texts = [UDHR["en"][:2000], UDHR["hi"][:2000]]
    train = [counted(t) for t in texts]
    dev = [counted(UDHR["en"][2000:2300]), counted(UDHR["hi"][2000:2300])]
    parity = train_parity_merges(train, dev, 50, global_merges=50)
    summed = cybpe.ChunkCounts("cl100k").update(texts).sorted_arrays()
    plain = reference_train_merges(*summed, 50)
    assert parity.merges == plain.merges and set(parity.chosen) == {-1}


def test_worst_language_chosen_and_lengths_never_grow():
    langs = [l for l in ["en", "hi", "zh-Hans", "ko", "th"] if l in UDHR]
    train, dev = udhr_split(langs, 4000, 800)
    ref = reference_parity_merges(train, dev, 0, tie_key=_tie_key("ids"))
    previous = ref.dev_lengths
    fast_steps = []
    for n in range(1, 31):  # the trajectory, one more merge at a time
        step = train_parity_merges(train, dev, n)
        worst = max(range(len(langs)), key=lambda l: (previous[l], -l))
        assert step.chosen[-1] == worst
        assert all(a <= b for a, b in zip(step.dev_lengths, previous))
        previous = step.dev_lengths
        fast_steps.append(step.chosen[-1])
    assert len(set(fast_steps)) > 1  # more than one language got served


def test_language_without_pairs_is_passed_over():
    train = [([b"a"], [3]), ([b"hello", b"help"], [2, 1])]  # language 0 has nothing to merge
    dev = [([b"aaaaaaaaaa"], [1]), ([b"hello"], [1])]
    result = assert_same(train, dev, 3)
    assert result.chosen == [1, 1, 1]
    assert assert_same([([b"a"], [1])], [([b"aa"], [1])], 3).stop_reason == "no_pairs"


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.lists(st.text(alphabet="aab c\u00e9\u0915\u093f", max_size=12), min_size=1, max_size=5),
                min_size=1, max_size=3),
       st.integers(0, 4), st.integers(0, 25))
def test_random_equals_reference(texts, global_merges, n_new):
    train = [counted(" ".join(t)) if "".join(t) else ([b"a"], [1]) for t in texts]
    dev = [counted(t[0]) if t[0] else ([b"b"], [1]) for t in texts]
    assert_same(train, dev, n_new, global_merges=global_merges)


def test_parallel_set_checks():
    with pytest.raises(InvalidParameterError, match="line-aligned"):
        ParallelSet({"en": "a\nb", "fr": "a"})
    with pytest.raises(InvalidParameterError):
        ParallelSet({})
    with pytest.raises(ParameterTypeError):
        ParallelSet(["en"])  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        ParallelSet({"en": "a"}, global_merges=-1)
    parallel = ParallelSet({"en": "a\nb", "fr": "c\nd"}, global_merges=3)
    assert parallel.languages == ["en", "fr"] and parallel.global_merges == 3
    with pytest.raises(ParameterTypeError):
        cybpe.train(["abc"], 300, parity=parallel)
    with pytest.raises(InvalidParameterError, match="same languages"):
        cybpe.train({"en": ["abc"]}, 300, parity=parallel)
    with pytest.raises(InvalidParameterError), pytest.warns(DeprecationWarning):
        cybpe.train({"en": ["abc"], "fr": ["d"]}, 300, parity=parallel, return_counts=True)


def test_train_parity_end_to_end_and_exports(tmp_path):
    langs = [l for l in ["en", "hi", "zh-Hans", "ar", "ru"] if l in UDHR]
    train_texts = {l: [UDHR[l][:5000]] for l in langs}
    dev_texts = {l: "\n".join(UDHR[l][5000:7000].splitlines()[:10]) for l in langs}
    dev_lines = {l: "\n".join((t.splitlines() + [""] * 10)[:10]) for l, t in dev_texts.items()}
    tok = cybpe.train(train_texts, 700, parity=ParallelSet(dev_lines), special_tokens=["<|end|>"])
    report = tok.metadata["training"]
    assert tok.n_vocab == 700 and report["n_merges"] == 700 - 257
    # the trainer's dev lengths are what the tokenizer's encoder gives on the dev texts
    for lang in langs:
        assert len(tok.encode_ordinary(dev_lines[lang])) == report["parity"]["dev_tokens_after"][lang]
    # same merges as the reference on the same counts
    counts = [cybpe.ChunkCounts("cl100k", ["<|end|>"]).update(train_texts[l]).sorted_arrays() for l in langs]
    devs = [cybpe.ChunkCounts("cl100k", ["<|end|>"]).update([dev_lines[l]]).sorted_arrays() for l in langs]
    ref = reference_parity_merges(counts, devs, 700 - 257, tie_key=_tie_key("ids"))
    assert tok.vocab.tokens == ref.token_bytes and list(map(tuple, tok.vocab.merges)) == ref.merges
    assert_exports_agree(tok, [UDHR[l][7000:9000] for l in langs], tmp_path)


def test_tie_key_for_equals_the_reference_tie_rule():
    from cybpe.training.parity import tie_key_for
    for rule in ("ids", "huggingface"):
        assert [tie_key_for(rule)(t) for t in range(300)] == [_tie_key(rule)(t) for t in range(300)]
    with pytest.raises(InvalidParameterError):
        tie_key_for("alphabetical")


def test_equals_reference_on_ntrex(shared_dir):
    """Real parallel news text: lines 40-99 train, lines 0-19 are the dev set (line-aligned)."""
    langs = ["en", "my", "hi", "ja", "ta", "ar"]
    lines = {l: (shared_dir / "corpora/eval/parallel-ntrex" / f"{l}.txt").read_text(encoding="utf-8").splitlines()
             for l in langs}
    train = [counted("\n".join(lines[l][40:100])) for l in langs]
    dev = [counted("\n".join(lines[l][:20])) for l in langs]
    result = assert_same(train, dev, 120)
    assert len(set(result.chosen)) >= 3  # several languages were served
    assert result.dev_lengths[langs.index("my")] < result.dev_lengths_start[langs.index("my")]
