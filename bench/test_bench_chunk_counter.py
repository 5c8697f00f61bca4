"""The compiled chunk table (``cybpe.training.chunk_counter.ChunkCounter``): counting a slice of
the training corpus, then reading its items sorted, against ``collections.Counter`` over the
scanner's pieces.

python -m pytest bench/test_bench_chunk_counter.py --benchmark-group-by=group
BENCH_COUNTER_MB=N (default 10): megabytes of the training corpus counted.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

import cybpe
from bench_support import training_text
from cybpe.training.chunk_counter import ChunkCounter

MEGABYTES = int(os.environ.get("BENCH_COUNTER_MB", "10"))


@pytest.fixture(scope="module")
def sample() -> str:
    return training_text(MEGABYTES)


@pytest.mark.parametrize("how", ["ChunkCounter", "Counter(split)"])
def test_count(benchmark, sample, how):
    benchmark.group = f"count {MEGABYTES} MB"
    if how == "ChunkCounter":
        def count():
            counter = ChunkCounter("cl100k")
            counter.add_text(sample)
            return len(counter)
    else:
        pre = cybpe.get_pretokenizer("cl100k")

        def count():
            return len(Counter(pre.split(sample)))
    chunks = benchmark.pedantic(count, rounds=3, iterations=1)
    reference = ChunkCounter("cl100k")
    reference.add_text(sample)
    assert chunks == len(reference)  # both count the same distinct chunks
    benchmark.extra_info["chunks"] = chunks


def test_sorted_items(benchmark, sample):
    benchmark.group = f"sorted items of {MEGABYTES} MB"
    counter = ChunkCounter("cl100k")
    counter.add_text(sample)
    benchmark.pedantic(counter.items, kwargs={"sort": True}, rounds=3, iterations=1)
