"""The seam-cut replay (cybpe/training/replay.pyx) equals encoding whole chunks, and the trainer
loaded from its token sequences equals the trainer that replays the merges one by one.

Oracles: ``RankEncoder.encode_utf8`` on whole chunks (itself tested against the pure-Python
reference encoder), ``replay="merges"`` (the trainer applies the forced merges itself) and the
reference trainer. Inputs: SuperBPE's stage-2 chunks of the shared evaluation corpora, with
stage 1 trained on them, and random byte strings with random seed tokens (hypothesis).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.encode.encoder import RankEncoder
from cybpe.errors import InvalidParameterError
from cybpe.reference.trainer import reference_train_merges
from cybpe.training.replay import encode_at_seams, joined_pairs
from cybpe.training.rules import superbpe_vetoes
from cybpe.training.trainer import _train_merges_seeded, train_merges
from support import examples


def eval_texts(shared_dir, chars=6_000):
    files = sorted((shared_dir / "corpora" / "eval").glob("**/*.txt"))
    assert files, f"no evaluation texts under {shared_dir}"
    return [path.read_text(encoding="utf-8")[:chars] for path in files]


def stage_two(texts, t):
    """Stage 1 trained to t on ``texts`` and the superbpe chunks of ``texts`` with counts."""
    stage1 = cybpe.train(texts, t, progress=False)
    counts = cybpe.ChunkCounts("superbpe").update(texts)
    chunks, weights = counts.sorted_arrays()
    return stage1, chunks, weights


def whole_and_seamed(tokens, merges, chunks):
    encoder = RankEncoder(tokens, merges, whole_piece_lookup=False)
    chunks = [c for c in chunks if c]
    data = b"".join(chunks)
    ends = np.cumsum([len(c) for c in chunks], dtype=np.int64)
    whole = encoder.encode_utf8(data, ends)
    ids, starts = encode_at_seams(encoder, data, ends, joined_pairs(tokens[256:]))
    return encoder, data, ends, whole, ids, starts


def test_seamed_ids_equal_whole_chunk_ids_on_every_script(shared_dir):
    texts = eval_texts(shared_dir)
    stage1, chunks, _ = stage_two(texts, 3000)
    encoder, data, ends, whole, ids, starts = whole_and_seamed(stage1.vocab.tokens, stage1.vocab.merges, chunks)
    assert ids.dtype == np.uint32 and ids.tolist() == whole.tolist()
    # starts: chunk c's ids decode to chunk c
    assert starts[0] == 0 and starts[-1] == len(ids)
    lengths = np.diff(np.concatenate([[0], ends]))
    for c in range(0, len(ends), max(1, len(ends) // 500)):
        assert encoder.decode_bytes(ids[starts[c]:starts[c + 1]]) == data[ends[c] - lengths[c]:ends[c]]
    # the test has teeth: cutting everywhere (no pair joined) gives other ids on this text
    everywhere, _ = encode_at_seams(encoder, data, ends, np.zeros(65536, dtype=np.uint8))
    assert everywhere.tolist() != whole.tolist()


def test_joined_pairs_lists_the_byte_pairs_inside_tokens():
    rng = random.Random(4)
    tokens = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) for _ in range(300)]
    want = np.zeros(65536, dtype=np.uint8)
    for token in tokens:
        for x, y in zip(token, token[1:]):
            want[x << 8 | y] = 1
    assert joined_pairs(tokens).tolist() == want.tolist()
    assert joined_pairs([]).sum() == 0 and joined_pairs([b"a"]).sum() == 0


@st.composite
def seeded_chunks(draw):
    """Random seed tokens built by merges in order (so the merge list encodes them) and chunks."""
    alphabet = draw(st.lists(st.integers(0, 255), min_size=2, max_size=6, unique=True))
    tokens = [bytes([b]) for b in range(256)]
    index = {t: i for i, t in enumerate(tokens)}
    merges = []
    for _ in range(draw(st.integers(0, 40))):
        left = draw(st.sampled_from(sorted(set(alphabet) | set(range(256, len(tokens))))))
        right = draw(st.sampled_from(sorted(set(alphabet) | set(range(256, len(tokens))))))
        new = tokens[left] + tokens[right]
        if new not in index:
            index[new] = len(tokens)
            tokens.append(new)
            merges.append((left, right))
    chunks = draw(st.lists(st.binary(min_size=1, max_size=40).map(
        lambda b: bytes(alphabet[x % len(alphabet)] for x in b)), min_size=1, max_size=30))
    return tokens, merges, chunks


@settings(max_examples=examples(300), deadline=None)
@given(case=seeded_chunks())
def test_seamed_ids_equal_whole_chunk_ids_on_random_merges(case):
    tokens, merges, chunks = case
    _, _, _, whole, ids, starts = whole_and_seamed(tokens, merges, chunks)
    assert ids.tolist() == whole.tolist()
    assert len(starts) == len(chunks) + 1 and starts[-1] == len(ids)


def test_bad_arguments_are_refused():
    encoder = RankEncoder([bytes([b]) for b in range(256)], [])
    joined = np.zeros(65536, dtype=np.uint8)
    with pytest.raises(InvalidParameterError, match="65536"):
        encode_at_seams(encoder, b"abc", [3], joined[:10])
    with pytest.raises(InvalidParameterError, match="len\\(data\\)"):
        encode_at_seams(encoder, b"abc", [2], joined)
    with pytest.raises(InvalidParameterError, match="increasing"):
        encode_at_seams(encoder, b"abc", [2, 2, 3], joined)
    ids, starts = encode_at_seams(encoder, b"", [], joined)
    assert ids.tolist() == [] and starts.tolist() == [0]


# "ids" also runs the reference trainer: minutes
@pytest.mark.parametrize("tie_break", [pytest.param("ids", marks=pytest.mark.slow), "huggingface"])
def test_stage_two_from_token_sequences_equals_replaying_merges_and_the_reference(shared_dir, tie_break):
    """The trainer loaded from seam-cut token sequences (grouped pair counting) against the
    trainer replaying stage 1 merge by merge, and the reference trainer, with the vetoes."""
    texts = eval_texts(shared_dir, chars=3_000)
    stage1, chunks, weights = stage_two(texts, 1500)
    seeds, forced = stage1.vocab.tokens[256:], stage1.vocab.merges
    runs = {}
    for replay in ("encode", "merges"):
        runs[replay] = _train_merges_seeded(chunks, weights, 700, seeds, forced_merges=forced,
                                           veto=superbpe_vetoes, tie_break=tie_break, replay=replay)
    (fast, fast_stats), (slow, slow_stats) = runs["encode"], runs["merges"]
    assert fast.merges == slow.merges and fast.token_bytes == slow.token_bytes
    assert fast.counts[len(forced):] == slow.counts[len(forced):]
    assert fast_stats["sorted_lists"] == 0  # occurrence lists came out in node order
    if tie_break == "ids":
        ref = reference_train_merges(chunks, weights, 700, seed_tokens=seeds, forced_merges=forced,
                                     veto=superbpe_vetoes)
        assert ref.merges == fast.merges and ref.token_bytes == fast.token_bytes


def test_token_sequences_with_no_pair_and_single_tokens():
    # chunks that are one seed token each: no pair to count, training stops at once
    result = train_merges([b"ab", b"abab"], [3, 1], 5, seed_tokens=[b"ab", b"abab"],
                          forced_merges=[(97, 98), (256, 256)])
    assert result.stop_reason == "no_pairs" and len(result.merges) == 2
