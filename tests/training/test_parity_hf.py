"""Parity-aware merges against HF tokenizers' ``ParityBpeTrainer`` on real parallel text.

The two agree on everything but one rule: among pairs of equal count, cybpe takes the smallest
ids (``tie_break``), HF's trainer (like the paper's code) the lexicographically largest pair. So
the test runs as long as no tie decides a merge, finds that step, and checks that the first tie
is where (and why) they part.
"""

from __future__ import annotations

import json

import pytest

import cybpe
from cybpe.formats.bytelevel import bytelevel_to_bytes, bytes_to_bytelevel
from cybpe.reference.parity import reference_parity_merges
from cybpe.training.parity import merge_word, train_parity_merges

tokenizers = pytest.importorskip("tokenizers")
if not hasattr(tokenizers.trainers, "ParityBpeTrainer"):
    pytest.skip("this tokenizers has no ParityBpeTrainer (added in 0.23)", allow_module_level=True)

LANGS = ["en", "hi", "ja", "my", "ar"]
N_MERGES = 60


def hf_parity_merges(train_words, dev_words, n_merges, **options):
    """HF's merges as bytes pairs, each word fed as one pre-tokenized item (ByteLevel without its
    regex), so both libraries count exactly the same chunks."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.ParityBpeTrainer(num_merges=n_merges, min_frequency=0,
                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), **options)
    trainer.train_from_iterator(tok, train_iterators=[iter(w) for w in train_words],
                                dev_iterators=[iter(w) for w in dev_words])
    return [(bytelevel_to_bytes(a), bytelevel_to_bytes(b))
            for a, b in json.loads(tok.to_str())["model"]["merges"]]


def as_words(counts):
    """Chunk counts as the word list HF counts back (each chunk repeated by its weight)."""
    chunks, weights = counts
    return [chunk.decode("utf-8") for chunk, w in zip(chunks, weights) for _ in range(int(w))]


def spelled(result):
    return [(result.token_bytes[a], result.token_bytes[b]) for a, b in result.merges]


@pytest.mark.slow
@pytest.mark.parametrize("ours_options, hf_options", [
    ({}, {}),
    ({"global_merges": 10}, {"global_merges": 10}),
    ({"window": 5, "alpha": 2.0}, {"variant": "window", "window_size": 5, "alpha": 2.0}),
], ids=["classic", "hybrid", "window"])
def test_parity_merges_equal_hf_until_the_first_tie(shared_dir, ours_options, hf_options):
    root = shared_dir / "corpora/eval/parallel-ntrex"
    lines = {l: (root / f"{l}.txt").read_text(encoding="utf-8").splitlines() for l in LANGS}
    train = [cybpe.ChunkCounts("gpt2").update(["\n".join(lines[l][100:300])]).sorted_arrays() for l in LANGS]
    dev = [cybpe.ChunkCounts("gpt2").update(["\n".join(lines[l][:20])]).sorted_arrays() for l in LANGS]
    ours = train_parity_merges(train, dev, N_MERGES, **ours_options)
    # the opposite tie rule (largest ids first): the first step where it differs is the first
    # step a tie decided, in cybpe's loop as in any other
    reverse = reference_parity_merges(train, dev, N_MERGES, tie_key=lambda token: -token, **ours_options)
    first_tie = next((k for k, (a, b) in enumerate(zip(spelled(ours), spelled(reverse))) if a != b), N_MERGES)
    assert first_tie >= 20, "the case is meant to run a while before its first tie"
    assert len(set(ours.chosen[:first_tie])) >= 2  # two languages (or the summed counts) served

    hf = hf_parity_merges([as_words(c) for c in train], [as_words(c) for c in dev], first_tie + 1,
                          **hf_options)
    assert hf[:first_tie] == spelled(ours)[:first_tie]

    # at the tie: both picks are among the tied pairs of the same language's counts; cybpe's has
    # the smallest ids, HF's is the lexicographically largest in HF's ByteLevel spelling
    if first_tie < N_MERGES:
        lang = ours.chosen[first_tie]
        if lang < 0:   # a summed-count merge
            return
        words = [list(chunk) for chunk in train[lang][0]]
        for (left, right), new_id in zip(ours.merges[:first_tie], ours.new_ids[:first_tie]):
            words = [merge_word(w, left, right, new_id) for w in words]
        counts: dict[tuple[int, int], int] = {}
        for w, weight in zip(words, train[lang][1]):
            for pair in zip(w, w[1:]):
                counts[pair] = counts.get(pair, 0) + int(weight)
        top = max(counts.values())
        tied = [(ours.token_bytes[a], ours.token_bytes[b]) for (a, b), n in counts.items() if n == top]
        assert len(tied) >= 2 and spelled(ours)[first_tie] in tied
        assert hf[first_tie] == max(tied, key=lambda p: (bytes_to_bytelevel(p[0]), bytes_to_bytelevel(p[1])))
        assert hf[first_tie] != spelled(ours)[first_tie]
