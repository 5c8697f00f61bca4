"""The Cython merge trainer (``cybpe.training.trainer``) against the Python reference, rustbpe and HF."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cybpe.reference.trainer import reference_train_merges
from cybpe.training.trainer import PROGRESS_EVERY, _train_merges_seeded, train_merges
from cybpe.errors import InvalidParameterError, TrainingError
from support import DATA_DIR, GPT4_PATTERN, LLAMA3_PATTERN, UDHR_DIR, examples
from support import TRAIN_FIELDS as FIELDS
from support import byte_level_decoder, corpora, count_chunks, merged_bytes, read_training_prefix


def assert_same(chunks, weights, n_new_tokens, **options):
    """Run both trainers, require identical results, return the Cython one."""
    fast = train_merges(chunks, weights, n_new_tokens, **options)
    slow = reference_train_merges(chunks, weights, n_new_tokens, **options)
    for field in FIELDS:
        assert getattr(fast, field) == getattr(slow, field), field
    return fast


# ---------------------------------------------------------------------------------------------
# 1. Hand cases whose answers follow from the semantics (cybpe.reference.trainer's docstring)
# ---------------------------------------------------------------------------------------------

def test_run_of_three_counts_both_windows_and_merges_left_first():
    result = assert_same([b"aaa"], [5], 10)
    # (a,a) sits in 2 windows; merging left to right leaves [aa][a]; then (aa,a); then nothing.
    assert result.merges == [(97, 97), (256, 97)]
    assert result.counts == [10, 5]
    assert result.token_bytes[256:] == [b"aa", b"aaa"]
    assert result.stop_reason == "no_pairs"


def test_run_of_four_becomes_two_pairs():
    result = assert_same([b"aaaa"], [1], 10)
    assert result.merges == [(97, 97), (256, 256)]
    assert result.counts == [3, 1]


def test_run_of_five_breaks_the_tie_by_smaller_pair():
    # [aa][aa][a]: (aa,aa) and (aa,a) both count 1; (256, 97) < (256, 256).
    result = assert_same([b"aaaaa"], [1], 10)
    assert result.merges == [(97, 97), (256, 97), (256, 257)]


def test_ties_go_to_the_smallest_pair_of_ids():
    result = assert_same([b"cd", b"ab", b"\x01\x02"], [4, 4, 4], 3)
    assert result.merges == [(1, 2), (97, 98), (99, 100)]


def test_huggingface_ties_put_printable_bytes_before_control_bytes():
    result = assert_same([b"\x01\x02", b"ab", b" !"], [4, 4, 4], 3, tie_break="huggingface")
    # HF ByteLevel order: printable bytes (33..126 ...) first, then 0..32, then 127..160, then 173.
    assert result.merges == [(97, 98), (1, 2), (32, 33)]


def test_tie_experiment_from_the_notes():
    # The merges that real rustbpe and HF BpeTrainer gave on this corpus.
    chunks, weights = count_chunks([" ".join(["zy", "ab", " x!", "~!", "\x01\x02"] * 50)])
    ids = assert_same(chunks, weights, 6)
    assert ids.merges == [(1, 2), (32, 97), (32, 120), (32, 126), (32, 256), (122, 121)]
    hf = assert_same(chunks, weights, 6, tie_break="huggingface")
    assert hf.merges == [(97, 98), (122, 121), (126, 33), (1, 2), (32, 120), (32, 256)]


def test_min_frequency_stops_before_a_rare_pair():
    result = assert_same([b"ab", b"cd"], [3, 2], 10, min_frequency=3)
    assert result.merges == [(97, 98)]
    assert result.stop_reason == "min_frequency"
    for never in (0, 1):
        result = assert_same([b"ab", b"cd"], [3, 2], 10, min_frequency=never)
        assert result.stop_reason == "no_pairs"


def test_stop_reasons_and_empty_inputs():
    assert assert_same([b"abc"], [1], 1).stop_reason == "vocab_size"
    assert assert_same([b"abc"], [1], 0).merges == []
    assert assert_same([], [], 5).stop_reason == "no_pairs"
    assert assert_same([b"a", b""], [3, 2], 5).merges == []   # too short to hold a pair


def test_duplicate_bytes_reuse_the_existing_id():
    # A merge spelling an existing token (here a seed token, id 256) is recorded with that id and
    # does not count as new; the next new token still gets a fresh id.
    result, stats = _train_merges_seeded([b"abc"], [2], 1, [b"ab"])
    assert result.merges == [(97, 98), (256, 99)]
    assert result.new_ids == [256, 257]
    assert result.token_bytes[256:] == [b"ab", b"abc"]
    assert stats["reused_ids"] == 1
    slow = reference_train_merges([b"abc"], [2], 1, seed_tokens=[b"ab"])
    assert [getattr(slow, f) for f in FIELDS] == [getattr(result, f) for f in FIELDS]


# ---------------------------------------------------------------------------------------------
# 1b. Generated cases
# ---------------------------------------------------------------------------------------------

@settings(max_examples=examples(300), deadline=None)
@given(corpora(), st.integers(0, 50), st.sampled_from(["ids", "huggingface"]),
       st.sampled_from([0, 0, 1, 2, 5, 2**40]))
def test_generated_corpora_match_the_reference(corpus, n_new, tie_break, min_frequency):
    chunks, weights = corpus
    assert_same(chunks, weights, n_new, tie_break=tie_break, min_frequency=min_frequency)


@settings(max_examples=examples(300), deadline=None)
@given(corpora(), st.integers(0, 50), st.sampled_from(["ids", "huggingface"]))
def test_no_merge_ever_spells_an_existing_token(corpus, n_new, tie_break):
    # With exact BPE (global merges, greedy left-to-right application) a byte string is produced
    # by at most one merge: if bytes s were merged from (x, y) at step t1 and later formed as
    # (x', y') in some chunk, that region's boundaries are token boundaries at every step up to
    # then, so its segmentation is that of s alone -- which became one token at t1. So every merge
    # gets a fresh id; the duplicate-bytes rule is only reachable with seed tokens (below).
    chunks, weights = corpus
    result, stats = _train_merges_seeded(chunks, weights, n_new, [], tie_break=tie_break)
    assert result.new_ids == list(range(256, 256 + len(result.merges)))
    assert stats["reused_ids"] == 0 and stats["sorted_lists"] == 0


@settings(max_examples=examples(300), deadline=None)
@given(corpora(), st.lists(st.binary(min_size=2, max_size=5), max_size=6, unique=True),
       st.integers(0, 40), st.sampled_from(["ids", "huggingface"]))
def test_seed_tokens_match_the_reference(corpus, seeds, n_new, tie_break):
    chunks, weights = corpus
    alphabet = sorted(set(b"".join(chunks))) or [97]
    # seeds over the corpus alphabet, so that merges really spell them
    seeds = list(dict.fromkeys(bytes(alphabet[b % len(alphabet)] for b in s) for s in seeds))
    fast, stats = _train_merges_seeded(chunks, weights, n_new, seeds, tie_break=tie_break)
    slow = reference_train_merges(chunks, weights, n_new, tie_break=tie_break, seed_tokens=seeds)
    for field in FIELDS:
        assert getattr(fast, field) == getattr(slow, field), field
    assert stats["reused_ids"] == sum(i < 256 + len(seeds) for i in fast.new_ids)


def test_seed_tokens_really_trigger_reuse():
    rng = random.Random(7)
    reused = 0
    for _ in range(200):
        chunks = list({bytes(rng.choice(b"abc") for _ in range(rng.randint(2, 9)))
                       for _ in range(rng.randint(2, 8))})
        seeds = list({bytes(rng.choice(b"abc") for _ in range(rng.randint(2, 4)))
                      for _ in range(3)})
        weights = [rng.randint(1, 9) for _ in chunks]
        fast, stats = _train_merges_seeded(chunks, weights, 20, seeds)
        slow = reference_train_merges(chunks, weights, 20, seed_tokens=seeds)
        assert [getattr(fast, f) for f in FIELDS] == [getattr(slow, f) for f in FIELDS]
        reused += stats["reused_ids"]
    assert reused > 50


# ---------------------------------------------------------------------------------------------
# 2. Real text
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_real_text_from_the_shared_corpora_matches_the_reference(shared_dir):
    texts = [(shared_dir / "corpora" / "eval" / name).read_text(encoding="utf-8")[:100_000]
             for name in ("docs/en.txt", "docs/ja.txt", "code/python.txt")]
    chunks, weights = count_chunks(texts)
    result = assert_same(chunks, weights, 200)
    assert len(result.merges) == 200


def test_real_text_from_tests_data_matches_the_reference():
    texts = [(UDHR_DIR / f"{lang}.txt").read_text(encoding="utf-8")
             for lang in ("en", "ja", "hi")]
    texts.append((DATA_DIR / "python_sample.txt").read_text(encoding="utf-8")[:60_000])
    chunks, weights = count_chunks(texts)
    result = assert_same(chunks, weights, 150, tie_break="huggingface", min_frequency=3)
    assert len(result.merges) > 100


# ---------------------------------------------------------------------------------------------
# 3. rustbpe and 4. HuggingFace parity
# ---------------------------------------------------------------------------------------------

def first_reuse(result):
    """Index of the first merge that reused an id (none happen with exact BPE), else None."""
    fresh = 256
    for k, new_id in enumerate(result.new_ids):
        if new_id != fresh:
            return k
        fresh += 1
    return None


def test_same_merges_as_rustbpe(shared_dir):
    rustbpe = pytest.importorskip("rustbpe")
    vocab_size = 4096
    documents = read_training_prefix(shared_dir, 1_500_000).split("\n\n")
    peer = rustbpe.Tokenizer()
    peer.train_from_iterator(iter(documents), vocab_size, pattern=GPT4_PATTERN)
    ranks = peer.get_mergeable_ranks()
    ranks = sorted(ranks.items() if isinstance(ranks, dict) else ranks, key=lambda item: item[1])
    assert [rank for _, rank in ranks] == list(range(vocab_size))
    peer_tokens = [token for token, _ in ranks]

    chunks, weights = count_chunks(documents)
    result = train_merges(chunks, weights, vocab_size - 256)
    ours = result.token_bytes
    stop = first_reuse(result)
    if stop is not None:  # rustbpe always takes a fresh id: compare up to the reuse
        print(f"merge {stop} reused an id; comparing the first {stop} merges only")
        assert ours[:256 + stop] == peer_tokens[:256 + stop]
    else:
        assert ours == peer_tokens


def test_same_merges_as_huggingface(shared_dir):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    vocab_size = 2048
    documents = read_training_prefix(shared_dir, 400_000).split("\n\n")
    peer = tokenizers.Tokenizer(models.BPE())
    peer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(LLAMA3_PATTERN), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    peer.train_from_iterator(documents, trainer)
    decode = byte_level_decoder()
    peer_merges = []
    for merge in json.loads(peer.to_str())["model"]["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        peer_merges.append(bytes(decode[c] for c in left) + bytes(decode[c] for c in right))

    chunks, weights = count_chunks(documents, LLAMA3_PATTERN)
    result = train_merges(chunks, weights, vocab_size - 256, tie_break="huggingface")
    assert first_reuse(result) is None
    assert merged_bytes(result) == peer_merges
    # the tie rule matters on this sample: the plain-ids rule gives another list
    plain = train_merges(chunks, weights, vocab_size - 256, tie_break="ids")
    assert merged_bytes(plain) != peer_merges


# ---------------------------------------------------------------------------------------------
# 5. Determinism and input forms
# ---------------------------------------------------------------------------------------------

def local_sample():
    texts = [(UDHR_DIR / f"{lang}.txt").read_text(encoding="utf-8")
             for lang in ("en", "ru", "zh-Hans")]
    return count_chunks(texts)


def test_same_result_twice_and_for_any_chunk_order():
    chunks, weights = local_sample()
    first = train_merges(chunks, weights, 1000)
    again = train_merges(chunks, weights, 1000)
    order = list(range(len(chunks)))
    random.Random(3).shuffle(order)
    shuffled = train_merges([chunks[i] for i in order], [weights[i] for i in order], 1000)
    for field in FIELDS:
        assert getattr(first, field) == getattr(again, field) == getattr(shuffled, field)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint64, np.uint16])
def test_numpy_weights_are_accepted(dtype):
    chunks, weights = local_sample()
    expected = train_merges(chunks, weights, 300)
    got = train_merges(tuple(chunks), np.array(weights, dtype=dtype), 300)
    for field in FIELDS:
        assert getattr(got, field) == getattr(expected, field)


def test_progress_is_called_in_batches_and_at_the_end():
    chunks, weights = local_sample()
    calls = []
    result = train_merges(chunks, weights, 3 * PROGRESS_EVERY + 5,
                          progress=lambda done, total: calls.append((done, total)))
    assert len(calls) >= 3
    assert [total for _, total in calls] == [3 * PROGRESS_EVERY + 5] * len(calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == 3 * PROGRESS_EVERY + 5
    assert result.merges == train_merges(chunks, weights, 3 * PROGRESS_EVERY + 5).merges


def test_an_exception_in_progress_propagates():
    chunks, weights = local_sample()

    def boom(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_merges(chunks, weights, 500, progress=boom)


# ---------------------------------------------------------------------------------------------
# 6. Errors
# ---------------------------------------------------------------------------------------------

def test_unknown_tie_break_lists_the_allowed_values():
    for trainer in (train_merges, reference_train_merges):
        with pytest.raises(InvalidParameterError, match="'ids', 'huggingface'"):
            trainer([b"ab"], [1], 1, tie_break="first")


@pytest.mark.parametrize("chunks, weights", [
    ([b"ab", b"cd"], [1]),            # length mismatch
    ([b"ab"], [0]),                   # not positive
    ([b"ab", b"cd"], [3, -1]),
    ([b"ab"], [1.5]),                 # not an integer
    ([b"ab"], [2**63]),               # beyond int64
    ([b"ab"], np.array([[1]])),       # wrong shape
])
def test_bad_weights_are_rejected(chunks, weights):
    with pytest.raises(InvalidParameterError):
        train_merges(chunks, weights, 1)


def test_reference_rejects_bad_weights_too():
    for weights in ([1], [0, 1], [1, -2]):
        with pytest.raises(InvalidParameterError):
            reference_train_merges([b"ab", b"cd"], weights, 1)


def test_bad_parameters_are_rejected():
    with pytest.raises(InvalidParameterError):
        train_merges(["ab"], [1], 1)                  # str, not bytes
    with pytest.raises(InvalidParameterError):
        train_merges([b"ab"], [1], -1)
    with pytest.raises(InvalidParameterError):
        train_merges([b"ab"], [1], 1, min_frequency=-1)
    with pytest.raises(InvalidParameterError):
        train_merges([b"ab"], [1], 1, progress="yes")
    with pytest.raises(InvalidParameterError):
        _train_merges_seeded([b"ab"], [1], 1, [b"ab", b"ab"])


def test_counts_that_would_overflow_int64_are_refused():
    with pytest.raises(TrainingError, match="overflow"):
        train_merges([b"abc", b"de"], [2**62, 2**62], 1)


def test_more_bytes_than_int32_node_ids_are_refused():
    block = bytes(1 << 24)  # 16 MiB, listed 128 times: 2**31 bytes, checked before allocating
    with pytest.raises(TrainingError, match="int32"):
        train_merges([block] * 128, [1] * 128, 1)
