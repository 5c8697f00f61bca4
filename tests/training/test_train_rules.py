"""Merge rules (max_token_length, merge vetoes) and resuming from a base tokenizer.

Each against the pure-Python reference trainer, HF ``BpeTrainer`` where it has the feature, and
the exports (native save/load, tiktoken, HF ``tokenizer.json``) with identical ids.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.training.rules import no_merges_across_scripts, script_of
from cybpe.reference.trainer import reference_train_merges
from cybpe.training.trainer import _train_merges_seeded, train_merges
from cybpe.errors import InvalidParameterError, TrainingError
from support import LLAMA3_PATTERN, UDHR_DIR, examples
from support import TRAIN_FIELDS as FIELDS
from support import (assert_exports_agree, byte_level_decoder, corpora, count_chunks, merged_bytes,
                     read_training_prefix)

UDHR = {p.stem: p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))}
TEXTS = list(UDHR.values())


def assert_same(chunks, weights, n_new, **options):
    fast = train_merges(chunks, weights, n_new, **options)
    slow = reference_train_merges(chunks, weights, n_new, **options)
    for field in FIELDS:
        assert getattr(fast, field) == getattr(slow, field), field
    return fast


# ---------------------------------------------------------------------------------------------
# max_token_length
# ---------------------------------------------------------------------------------------------

def test_max_token_length_hand_case():
    # aaaaaaaa: aa, then aaaa (4 bytes) is refused with limit 4 (4 is not < 4); with 5 it forms.
    four = assert_same([b"aaaaaaaa"], [1], 10, max_token_length=4)
    assert four.token_bytes[256:] == [b"aa"] and four.stop_reason == "no_pairs"
    five = assert_same([b"aaaaaaaa"], [1], 10, max_token_length=5)
    assert five.token_bytes[256:] == [b"aa", b"aaaa"]
    # two single bytes always merge (HF counts them before any merge), even with limit 1 or 2
    for limit in (1, 2):
        assert assert_same([b"abab"], [3], 10, max_token_length=limit).token_bytes[256:] == [b"ab"]


def test_max_token_length_equals_huggingface(shared_dir):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    vocab_size = 1500
    documents = read_training_prefix(shared_dir, 300_000).split("\n\n")
    chunks, weights = count_chunks(documents, LLAMA3_PATTERN)
    decode = byte_level_decoder()
    for limit in (2, 4, 6, 9):
        peer = tokenizers.Tokenizer(models.BPE())
        peer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(tokenizers.Regex(LLAMA3_PATTERN), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, special_tokens=[],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False, max_token_length=limit)
        peer.train_from_iterator(documents, trainer)
        peer_merges = []
        for merge in json.loads(peer.to_str())["model"]["merges"]:
            left, right = merge.split(" ") if isinstance(merge, str) else merge
            peer_merges.append(bytes(decode[c] for c in left) + bytes(decode[c] for c in right))
        ours = train_merges(chunks, weights, vocab_size - 256, tie_break="huggingface",
                            max_token_length=limit)
        assert merged_bytes(ours) == peer_merges, limit
        assert max(map(len, ours.token_bytes)) == max(2, limit - 1)


def test_max_token_length_on_real_text_matches_the_reference(shared_dir):
    documents = read_training_prefix(shared_dir, 60_000).split("\n\n")
    chunks, weights = count_chunks(documents)
    result = assert_same(chunks, weights, 300, max_token_length=5)
    assert max(map(len, result.token_bytes)) == 4


# ---------------------------------------------------------------------------------------------
# Vetoes
# ---------------------------------------------------------------------------------------------

VETOES = {
    "none": None,
    "no-a-after": lambda left, right: right.startswith(b"a"),
    "odd-total": lambda left, right: (len(left) + len(right)) % 2 == 1,
    "no-ab": lambda left, right: b"ab" in left + right,
}


@settings(max_examples=examples(300), deadline=None)
@given(corpora(), st.integers(0, 40), st.sampled_from(["ids", "huggingface"]),
       st.sampled_from([None, 1, 2, 3, 4, 7]), st.sampled_from(sorted(VETOES)),
       st.sampled_from([0, 2]))
def test_generated_corpora_with_rules_match_the_reference(corpus, n_new, tie_break, limit, veto,
                                                          min_frequency):
    chunks, weights = corpus
    assert_same(chunks, weights, n_new, tie_break=tie_break, max_token_length=limit,
                veto=VETOES[veto], min_frequency=min_frequency)


def test_veto_is_asked_once_per_pair_and_its_errors_propagate():
    asked = []

    def veto(left, right):
        asked.append((left, right))
        return left == b"a"

    result = train_merges([b"abababa", b"aab"], [3, 2], 20, veto=veto)
    assert all(result.token_bytes[a] != b"a" for a, _ in result.merges)
    assert len(asked) == len(set(asked))

    def broken(left, right):
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        train_merges([b"abab"], [1], 5, veto=broken)


def test_bad_rule_parameters_are_rejected():
    with pytest.raises(InvalidParameterError):
        train_merges([b"ab"], [1], 1, max_token_length=0)
    with pytest.raises(InvalidParameterError):
        train_merges([b"ab"], [1], 1, max_token_length="8")
    with pytest.raises(InvalidParameterError):
        train_merges([b"ab"], [1], 1, veto=3)
    with pytest.raises(InvalidParameterError):
        cybpe.train(TEXTS, 300, merge_veto="nope", progress=False)


def _whole_or_one_char_start(token: bytes) -> bool:
    try:
        token.decode("utf-8")
        return True
    except UnicodeDecodeError:
        pass
    lead = token[0]
    need = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if lead >= 0xF0 else 0
    return 0 < len(token) < need and all(0x80 <= b <= 0xBF for b in token[1:])


def test_script_veto_rule():
    han = "中".encode()
    assert not no_merges_across_scripts(b" ", b"the")          # Common joins anything
    assert not no_merges_across_scripts("見".encode(), "る".encode())  # Han + Hiragana: Japanese
    assert not no_merges_across_scripts("ह".encode(), "ि".encode())   # a letter and its vowel sign
    assert no_merges_across_scripts(b"a", han)                 # Latin + Han
    assert no_merges_across_scripts("Ж".encode(), b"a")        # Cyrillic + Latin
    assert not no_merges_across_scripts(han[:1], han[1:2])     # building one character
    assert not no_merges_across_scripts(han[:2], han[2:])
    assert no_merges_across_scripts(b"a", han[:1])             # whole + part of a character
    assert no_merges_across_scripts(han[1:2], han[2:])         # two runs of continuation bytes
    assert no_merges_across_scripts(han[:2], han[2:] + b"\x80")  # past the character's end
    assert script_of("\U000F0000") == "Unknown" and script_of("x") == "Latin"


def test_script_veto_trains_single_script_tokens_and_matches_the_reference(tmp_path):
    mixed = [UDHR[lang][:3000] for lang in ("en", "ru", "ja", "hi")]
    # one pre-token per line, so that scripts meet inside chunks
    chunks, weights = count_chunks(mixed, r"[^\n]+|\n")
    result = assert_same(chunks, weights, 200, veto=no_merges_across_scripts)
    plain = train_merges(chunks, weights, 200)
    assert any(no_merges_across_scripts(plain.token_bytes[a], plain.token_bytes[b])
               for a, b in plain.merges)  # the rule bites on this text
    for a, b in result.merges:
        assert not no_merges_across_scripts(result.token_bytes[a], result.token_bytes[b])
    for token in result.token_bytes[256:]:
        assert _whole_or_one_char_start(token), token
    tok = cybpe.train(TEXTS, 1500, merge_veto="scripts", max_token_length=8, progress=False)
    assert tok.metadata["training"]["merge_veto"] == "scripts"
    assert tok.metadata["training"]["max_token_length"] == 8
    assert max(map(len, tok.vocab.tokens)) <= 7
    assert_exports_agree(tok, TEXTS, tmp_path)


# ---------------------------------------------------------------------------------------------
# Forced merges and seeds (the trainer side of resuming)
# ---------------------------------------------------------------------------------------------

@settings(max_examples=examples(200), deadline=None)
@given(corpora(), st.integers(0, 30), st.integers(0, 30), st.sampled_from(["ids", "huggingface"]),
       st.sampled_from([None, 3, 5]), st.sampled_from(["encode", "merges"]))
def test_resuming_the_trainer_equals_an_uninterrupted_run(corpus, first, more, tie_break, limit,
                                                          replay):
    chunks, weights = corpus
    options = dict(tie_break=tie_break, max_token_length=limit)
    whole = train_merges(chunks, weights, first + more, **options)
    part = train_merges(chunks, weights, first, **options)
    seeds = part.token_bytes[256:]
    n_more = more if part.stop_reason == "vocab_size" else 0
    resumed, _ = _train_merges_seeded(chunks, weights, n_more, seeds, forced_merges=part.merges,
                                      forced_counts=part.counts, replay=replay, **options)
    slow = reference_train_merges(chunks, weights, n_more, seed_tokens=seeds,
                                  forced_merges=part.merges, forced_counts=part.counts, **options)
    for field in FIELDS:
        assert getattr(resumed, field) == getattr(slow, field), field
    if part.stop_reason == "vocab_size":
        for field in FIELDS:
            assert getattr(resumed, field) == getattr(whole, field), field


@pytest.mark.parametrize("replay", ["encode", "merges"])
def test_forced_merges_absent_from_the_corpus_are_kept(replay):
    result, stats = _train_merges_seeded([b"abab"], [2], 1, [b"xy", b"xyz"], replay=replay,
                                         forced_merges=[(120, 121), (256, 122)])
    assert result.merges[:2] == [(120, 121), (256, 122)]
    assert result.counts[:2] == [0, 0] and result.new_ids[:3] == [256, 257, 258]
    assert result.token_bytes[258] == b"ab" and stats["reused_ids"] == 2


@settings(max_examples=examples(200), deadline=None)
@given(corpora(), st.lists(st.binary(min_size=2, max_size=5), max_size=6, unique=True),
       st.integers(0, 30), st.sampled_from(["ids", "huggingface"]), st.data())
def test_both_replays_agree_with_the_reference_on_any_seeds(corpus, seeds, n_new, tie_break, data):
    # forced merges of arbitrary seeds (not a previous run's), so the replays really differ in path
    chunks, weights = corpus
    alphabet = sorted(set(b"".join(chunks))) or [97]
    seeds = list(dict.fromkeys(bytes(alphabet[b % len(alphabet)] for b in s) for s in seeds))
    tokens = [bytes([b]) for b in range(256)] + seeds
    ids = {t: i for i, t in enumerate(tokens)}
    forced = []
    for seed in seeds:  # one split of each seed whose halves exist already
        splits = [(ids[seed[:k]], ids[seed[k:]]) for k in range(1, len(seed))
                  if seed[:k] in ids and seed[k:] in ids]
        if splits:
            forced.append(data.draw(st.sampled_from(splits)))
    results = [_train_merges_seeded(chunks, weights, n_new, seeds, forced_merges=forced,
                                    tie_break=tie_break, replay=replay)[0]
               for replay in ("encode", "merges")]
    slow = reference_train_merges(chunks, weights, n_new, seed_tokens=seeds, forced_merges=forced,
                                  tie_break=tie_break)
    for field in FIELDS:
        assert getattr(results[0], field) == getattr(results[1], field) == getattr(slow, field)


def test_forced_merges_must_spell_a_seed():
    with pytest.raises(InvalidParameterError, match="not a seed"):
        _train_merges_seeded([b"ab"], [1], 1, [b"xy"], forced_merges=[(97, 98)])
    with pytest.raises(InvalidParameterError, match="unknown id"):
        _train_merges_seeded([b"ab"], [1], 1, [b"xy"], forced_merges=[(97, 300)])


# ---------------------------------------------------------------------------------------------
# train(base=...)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tie_break", ["ids", "huggingface"])
@pytest.mark.parametrize("first", [256, 700])
def test_train_with_base_equals_training_from_scratch(tie_break, first):
    options = dict(tie_break=tie_break, progress=False, max_token_length=12)
    whole = cybpe.train(TEXTS, 1500, **options)
    base = cybpe.train(TEXTS, first, **options)
    resumed = cybpe.train(TEXTS, 1500, base=base, **options)
    assert resumed.vocab == whole.vocab
    report = resumed.metadata["training"]
    assert report["merge_counts"] == whole.metadata["training"]["merge_counts"]
    assert [s["n_tokens"] for s in report["stages"]] == [first, 1500]


def boundaries(tok, ids):
    ends, at = set(), 0
    for i in ids:
        at += len(tok.decode_single_token_bytes(i))
        ends.add(at)
    return ends


def assert_extends(base, grown, texts):
    """The grown tokenizer keeps the base's ids and merges, and only joins the base's tokens."""
    n = len(base.vocab.tokens)
    assert grown.vocab.tokens[:n] == base.vocab.tokens
    merges = base.vocab.merges
    if merges is not None:
        assert grown.vocab.merges[:len(merges)] == merges
    for text in texts:
        old, new = base.encode_ordinary(text), grown.encode_ordinary(text)
        assert boundaries(grown, new) <= boundaries(base, old)
        kept = {(i, at) for i, at in zip(old, sorted(boundaries(base, old)))}
        for i, at in zip(new, sorted(boundaries(grown, new))):
            if i < n:
                assert (i, at) in kept  # an old token is still the same token at the same place
        assert len(new) <= len(old)


def test_extending_a_trained_tokenizer_on_new_data(tmp_path):
    base = cybpe.train([UDHR["en"], UDHR["ru"]], 800, special_tokens=["<|end|>"], progress=False)
    grown = cybpe.train([UDHR["ja"], UDHR["hi"]], 1600, base=base, special_tokens=["<|pad|>"],
                        progress=False)
    assert grown.n_vocab == 1600
    assert grown.special_tokens == {"<|end|>": 1598, "<|pad|>": 1599}
    assert_extends(base, grown, TEXTS)
    held_out = [UDHR["ja"][-2000:], UDHR["hi"][-2000:]]
    assert sum(map(len, map(grown.encode_ordinary, held_out))) < \
        sum(map(len, map(base.encode_ordinary, held_out)))
    assert_exports_agree(grown, TEXTS, tmp_path)


@pytest.mark.slow
def test_extending_gpt2_and_cl100k_vocabularies(shared_dir, tmp_path):
    vocab = shared_dir / "vocab"
    gpt2 = cybpe.Tokenizer.from_gpt2(vocab / "gpt2" / "encoder.json", vocab / "gpt2" / "vocab.bpe")
    corpus = [UDHR["hi"], UDHR["ja"]]
    grown = cybpe.train(corpus, gpt2.n_vocab + 300, base=gpt2, progress=False)
    assert_extends(gpt2, grown, TEXTS)
    assert grown.pretokenizer == gpt2.pretokenizer
    cl100k = cybpe.Tokenizer.from_tiktoken(vocab / "cl100k_base.tiktoken")
    grown = cybpe.train(corpus, cl100k.n_vocab + 200, base=cl100k, progress=False)
    assert_extends(cl100k, grown, TEXTS)
    assert_exports_agree(grown, TEXTS, tmp_path)


def test_base_errors_are_typed():
    base = cybpe.train(TEXTS, 600, progress=False)
    with pytest.raises(TrainingError, match="base's 600 tokens"):
        cybpe.train(TEXTS, 599, base=base, progress=False)
    with pytest.raises(InvalidParameterError, match="base must be a Tokenizer"):
        cybpe.train(TEXTS, 700, base=base.vocab, progress=False)


# ---------------------------------------------------------------------------------------------
# SuperBPE (train(..., superword_from=t))
# ---------------------------------------------------------------------------------------------

SUPERBPE_TEXT = [UDHR["en"][:12_000], UDHR["ru"][:4_000],
                 "Call 555 1234 or 1234567 on 2024-01-31: the 3rd of 10,000 items.\n" * 3]


def test_superbpe_pretokenizer_splits_only_numbers_in_threes_from_the_right():
    pre = cybpe.get_pretokenizer("superbpe")
    assert pre.split("By the way, I am 1234567 km: ok\n\tno") == [
        "By the way, I am ", "1", "234", "567", " km: ok\n\tno"]
    assert pre.split("x١٢٣٤y½") == ["x", "١", "٢٣٤", "y", "½"]
    assert pre.split("") == []


def test_superbpe_vetoes():
    from cybpe.training.rules import superbpe_vetoes

    assert superbpe_vetoes(b"note", b": x") and superbpe_vetoes(b":", b" ")
    assert not superbpe_vetoes(b" of", b" the")
    assert not superbpe_vetoes(b"a b c", b"  d")        # four words, runs of spaces do not count
    assert superbpe_vetoes(b"a b c", b" d e")


def test_superbpe_stage_two_equals_the_reference_and_keeps_stage_one(tmp_path):
    import regex

    from cybpe.training.rules import superbpe_vetoes
    from cybpe.reference.encoder import reference_encode

    t, vocab_size = 700, 1000
    tok = cybpe.train(SUPERBPE_TEXT, vocab_size, superword_from=t, progress=False)
    stage1 = cybpe.train(SUPERBPE_TEXT, t, progress=False)
    report = tok.metadata["training"]
    assert [s["pretokenizer"] for s in report["stages"]] == ["cl100k", "superbpe"]
    assert report["superword_from"] == t and tok.pretokenizer.name == "superbpe"
    # stage 1 is exactly plain training to t, and stage 2 only appends
    assert tok.vocab.tokens[:t] == stage1.vocab.tokens
    assert tok.vocab.merges[:len(stage1.vocab.merges)] == stage1.vocab.merges
    # stage 2 against the reference trainer: superbpe chunks, stage 1 replayed, the vetoes
    counts = {}
    for text in SUPERBPE_TEXT:
        for piece in regex.findall(tok.pretokenizer.export_pattern, text):
            counts[piece.encode()] = counts.get(piece.encode(), 0) + 1
    slow = reference_train_merges(list(counts), list(counts.values()), vocab_size - t,
                                  seed_tokens=stage1.vocab.tokens[256:],
                                  forced_merges=stage1.vocab.merges, veto=superbpe_vetoes)
    assert slow.token_bytes == tok.vocab.tokens and slow.merges == tok.vocab.merges
    new = tok.vocab.tokens[t:]
    assert any(b" " in token.strip(b" ") for token in new)  # superwords were learned
    digit = regex.compile(r"\p{N}")
    for token in new:
        text = token.decode("utf-8", "replace")
        assert not (digit.search(text) and digit.sub("", text)), token  # no digit mixes
        assert b": " not in token and len([w for w in token.split(b" ") if w]) <= 4
    # encoding: the reference encoder over the stage-2 pieces, tiktoken and HF on the exports
    for text in SUPERBPE_TEXT:
        pieces = [p.encode() for p in regex.findall(tok.pretokenizer.export_pattern, text)]
        assert tok.encode_ordinary(text) == reference_encode(pieces, tok.vocab.tokens)
    assert_exports_agree(tok, SUPERBPE_TEXT + TEXTS, tmp_path)
    assert cybpe.Tokenizer.load(tmp_path / "tok.json").metadata["training"]["stages"] == \
        report["stages"]
    # fewer tokens than plain BPE at the same vocabulary size
    plain = cybpe.train(SUPERBPE_TEXT, vocab_size, progress=False)
    assert sum(len(tok.encode_ordinary(x)) for x in SUPERBPE_TEXT) < \
        sum(len(plain.encode_ordinary(x)) for x in SUPERBPE_TEXT)


def test_superbpe_errors_are_typed():
    with pytest.raises(InvalidParameterError, match="read twice"):
        cybpe.train(iter(TEXTS), 600, superword_from=400, progress=False)
    with pytest.raises(InvalidParameterError, match="superword_from"):
        cybpe.train(TEXTS, 600, superword_from=700, progress=False)
