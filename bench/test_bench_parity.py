"""Parity-aware training: cybpe vs HF tokenizers' ParityBpeTrainer on the NTREX languages.

python -m pytest bench/test_bench_parity.py --benchmark-group-by=group
    (BENCH_PARITY_BYTES=100000 per language, BENCH_PARITY_VOCAB=4096 by default)

The texts are those of ``training_variants_table.py``: the first N bytes of each NTREX language's
documents in the shared training corpus, the first half of NTREX as the parallel dev set (one dev
line per NTREX line). Both libraries split with GPT-2's pattern (HF: ByteLevel with its regex).
"""

from __future__ import annotations

import os

import pytest

import cybpe
from training_variants_table import ntrex_halves, shared, training_texts

PER_LANGUAGE = int(os.environ.get("BENCH_PARITY_BYTES", "100000"))
VOCAB = int(os.environ.get("BENCH_PARITY_VOCAB", "4096"))
VARIANTS = {"classic": ({}, {}),
            "window": ({"window": 100, "alpha": 2.0}, {"variant": "window", "window_size": 100, "alpha": 2.0})}


@pytest.fixture(scope="module")
def texts():
    root = shared()
    if not (root / "corpora/eval/parallel-ntrex").is_dir():
        pytest.skip(f"the shared corpora are absent ({root}; set CYBPE_SHARED)")
    ntrex = sorted(p.stem for p in (root / "corpora/eval/parallel-ntrex").glob("*.txt"))
    train = training_texts(root, ntrex, PER_LANGUAGE)
    languages = ["en"] + [lang for lang in ntrex if lang in train and lang != "en"]
    dev, _ = ntrex_halves(root, languages)
    return languages, train, dev


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("lib", ["cybpe", "hf"])
def test_parity_training(benchmark, texts, lib, variant):
    languages, train, dev = texts
    ours, theirs = VARIANTS[variant]
    benchmark.group = f"parity {variant}, {len(languages)} languages x {PER_LANGUAGE // 1000} kB, vocab {VOCAB}"
    if lib == "cybpe":
        def run():
            cybpe.train({lang: train[lang] for lang in languages}, VOCAB, "gpt2", progress=False,
                        parity=cybpe.ParallelSet({lang: dev[lang] for lang in languages}, **ours))
    else:
        tokenizers = pytest.importorskip("tokenizers")
        if not hasattr(tokenizers.trainers, "ParityBpeTrainer"):
            pytest.skip("this tokenizers has no ParityBpeTrainer")
        from tokenizers import models, pre_tokenizers, trainers

        def run():
            tok = tokenizers.Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
            trainer = trainers.ParityBpeTrainer(num_merges=VOCAB - 256, min_frequency=0,
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                **theirs)
            trainer.train_from_iterator(tok, train_iterators=[iter(train[lang]) for lang in languages],
                                        dev_iterators=[iter(dev[lang].splitlines()) for lang in languages])
    benchmark.pedantic(run, rounds=3 if lib == "cybpe" else 1, iterations=1)
