"""Training: cybpe vs rustbpe vs HF tokenizers on a prefix of the mixed training corpus.

python -m pytest bench/test_bench_train.py --benchmark-group-by=group   (BENCH_TRAIN_MB=10 by default)
"""

from __future__ import annotations

import os

import pytest

import cybpe
from bench_support import training_text

MB = int(os.environ.get("BENCH_TRAIN_MB", "10"))
GPT4 = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


@pytest.fixture(scope="module")
def corpus():
    text = training_text(MB)
    return [d for d in text.split("\n\n") if d]


@pytest.fixture(scope="module")
def counts(corpus):
    return cybpe.ChunkCounts("cl100k").update(corpus)


@pytest.mark.parametrize("vocab_size", [8192, 32768])
@pytest.mark.parametrize("lib", ["cybpe", "cybpe-merge-only", "rustbpe", "hf"])
def test_train(benchmark, corpus, counts, lib, vocab_size):
    benchmark.group = f"train {MB} MB vocab {vocab_size}"
    if lib == "cybpe":
        run = lambda: cybpe.train(corpus, vocab_size, "cl100k", workers=2, progress=False)  # noqa: E731
    elif lib == "cybpe-merge-only":
        run = lambda: cybpe.train(counts, vocab_size, progress=False)  # noqa: E731
    elif lib == "rustbpe":
        rustbpe = pytest.importorskip("rustbpe")

        def run():
            tok = rustbpe.Tokenizer()
            tok.train_from_iterator(iter(corpus), vocab_size, pattern=GPT4)
    else:
        tokenizers = pytest.importorskip("tokenizers")
        from tokenizers import Regex, models, pre_tokenizers, trainers

        def run():
            tok = tokenizers.Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(LLAMA3), "isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
            trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
            tok.train_from_iterator(corpus, trainer)
    benchmark.pedantic(run, rounds=1, iterations=1)


def test_train_superbpe(benchmark, corpus):
    """SuperBPE to 32768 with stage 1 to 24576, beside plain training to 32768 (same group); the
    stage times land in extra_info (``--benchmark-json``): stage 2 against the plain run is the
    README's ratio."""
    benchmark.group = f"train {MB} MB vocab 32768"
    stages = []

    def run():
        tok = cybpe.train(corpus, 32768, "cl100k", workers=2, progress=False, superword_from=24576)
        stages[:] = tok.metadata["training"]["stages"]

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info["stage1_seconds"] = stages[0]["seconds"]
    benchmark.extra_info["stage2_seconds"] = stages[1]["seconds"]
