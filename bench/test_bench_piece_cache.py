"""Warm piece caches (secondary rows, not the headline): what a piece every library has already
encoded costs, as the size of the set of such pieces grows.

For each pool size N, N distinct words of seven random lowercase letters after a space (no
cl100k_base token: each is BPE-merged into several ids, then kept in each library's piece
cache) are encoded once by every library, then each library encodes texts of 2,000 words drawn
at random from the pool. Every text is new to every library (a cache of whole inputs answers
none of them), while every piece is warm. One thread, cl100k_base; ids are checked against the
reference (tiktoken, else cybpe). ``extra_info["ns_per_word"]`` is the row's figure.

Where the one-pass table (``test_bench_onepass.py``) mixes first-seen pieces, tokens and
repeated pieces as real text does, these rows isolate the repeated ones: a pool of 1,000 words
fits the first cache levels, 32,000 does not.

    CYBPE_SHARED=../shared python -m pytest bench/test_bench_piece_cache.py \\
        --benchmark-group-by=group --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import random
import string
import time

import pytest

from bench_support import shared_path
from test_bench_onepass import LIBS, REFERENCE, Encoders

VOCAB = "cl100k_base"
POOLS = [1_000, 32_000]
WORDS_PER_TEXT = 2_000
ROUNDS = 5
TEXTS_PER_ROUND = 4
ONE_THREAD_LIBS = [lib for lib in LIBS if lib != "cybpe-2threads"]


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    if shared_path() is None:
        pytest.skip("the piece-cache rows need $CYBPE_SHARED/vocab (cl100k_base)")
    return Encoders(tmp_path_factory.mktemp("piece_cache"))


def pool_and_texts(size: int) -> tuple[list[str], list[list[str]]]:
    """The pool, and ROUNDS rounds of TEXTS_PER_ROUND texts drawn from it (the same for every
    library: seeded)."""
    rng = random.Random(size)
    pool = sorted({" " + "".join(rng.choice(string.ascii_lowercase) for _ in range(7)) for _ in range(size)})
    rounds = [["".join(rng.choice(pool) for _ in range(WORDS_PER_TEXT)) for _ in range(TEXTS_PER_ROUND)]
              for _ in range(ROUNDS)]
    return pool, rounds


_REFERENCE: dict[int, list[list[int]]] = {}


# Every library's row of one pool runs before the next pool's (lib varies fastest).
@pytest.mark.parametrize("lib", ONE_THREAD_LIBS)
@pytest.mark.parametrize("size", POOLS)
def test_warm_pieces(benchmark, encoders, lib, size):
    encode = encoders.get(VOCAB, lib)
    if encode is None:
        pytest.skip(encoders.reason[(VOCAB, lib)])
    pool, rounds = pool_and_texts(size)
    for k in range(0, len(pool), WORDS_PER_TEXT):  # every piece into the library's caches
        encode("".join(pool[k:k + WORDS_PER_TEXT]))
    got: list[list[int]] = []
    seconds: list[float] = []
    todo = iter(rounds)

    def run(texts: list[str]) -> None:
        start = time.perf_counter()
        out = [encode(t) for t in texts]
        seconds.append(time.perf_counter() - start)
        got.extend(list(ids) for ids in out)

    benchmark.group = f"warm pieces, pool of {size} words, {VOCAB} (secondary)"
    benchmark.pedantic(run, setup=lambda: ((next(todo),), {}), rounds=ROUNDS, iterations=1)
    if size not in _REFERENCE:
        reference = encoders.get(VOCAB, REFERENCE[VOCAB]) or encoders.get(VOCAB, "cybpe")
        _REFERENCE[size] = [list(reference(t)) for texts in rounds for t in texts]
    words = ROUNDS * TEXTS_PER_ROUND * WORDS_PER_TEXT
    benchmark.extra_info.update({
        "lib": lib, "pool": size, "ids_identical": got == _REFERENCE[size],
        "ns_per_word": sum(seconds) / words * 1e9,
        "best_round_ns_per_word": min(seconds) / (TEXTS_PER_ROUND * WORDS_PER_TEXT) * 1e9,
    })
