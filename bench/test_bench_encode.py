"""Warm encoding throughput (secondary rows): the same documents every round, cl100k ranks.

The headline is bench/test_bench_onepass.py (one pass over documents no library has seen,
every eval language and three vocabularies). Here every round re-encodes the same document set,
so a cache kept across calls (cybpe's per-thread piece cache, nanotok's, fastokens') turns these
rows into a measure of that cache; they are kept for the paths' own A/B comparisons (scanner,
custom pattern, regex split, two threads) and labelled "warm" in their group names.

cybpe: the hand-written cl100k scanner; cybpe-pattern: the same pattern string given as a
custom pre-tokenizer (compiled matcher); cybpe-regex: split by the regex module. Every peer is
measured at its best: HF and tokie load a tokenizer.json built the way peers are given one (the
classic cl100k string, merges reconstructed from the ranks, ``ignore_merges``); bpe-openai's
Rust backend is called directly. Before timing, each library's ids on the documents are compared
with tiktoken's and the result is recorded in the row (``extra_info["ids_identical"]``).

python -m pytest bench/test_bench_encode.py --benchmark-group-by=param:kind
BENCH_ROUNDS=9 (default 3): rounds per document set; on a host whose speed drifts within a
minute, more rounds make the minimum steadier.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

import cybpe
from bench_support import cl100k_ranks_path, peer_tokenizer_json, text_samples, training_text_of

TEXTS = text_samples()
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
LIBS = ["cybpe", "cybpe-2threads", "cybpe-pattern", "cybpe-regex", "tiktoken", "tiktoken-2threads", "hf",
        "tokie", "tokie-2threads", "bpe-openai", "nanotok"]


def documents(text: str, size: int = 16_000) -> list[str]:
    out, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    return out


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    path = cl100k_ranks_path()
    tok = cybpe.Tokenizer.from_tiktoken(path)
    found = {"cybpe": tok.encode_ordinary,
             "cybpe-2threads": ("batch", lambda docs: tok.encode_ordinary_batch(docs, num_threads=2))}
    # The same pattern as a custom pre-tokenizer (the "regex" plugin): the compiled matcher.
    pattern_tok = cybpe.Tokenizer(tok.vocab, cybpe.get_pretokenizer("regex", pattern=tok.pretokenizer.pattern))
    found["cybpe-pattern"] = pattern_tok.encode_ordinary
    # And split by the regex module itself (what CYBPE_FORCE_REGEX=1 does).
    regex_tok = cybpe.Tokenizer(tok.vocab, tok.pretokenizer.with_regex_only())
    found["cybpe-regex"] = regex_tok.encode_ordinary
    try:
        import tiktoken

        enc = tiktoken.Encoding("cl100k_base", pat_str=tok.pretokenizer.pattern, special_tokens={},
                                mergeable_ranks={b: i for i, b in enumerate(tok.vocab.tokens)})
        found["tiktoken"] = enc.encode_ordinary
        found["tiktoken-2threads"] = ("batch", lambda docs: enc.encode_ordinary_batch(docs, num_threads=2))
    except ImportError:
        pass
    peer_json = peer_tokenizer_json(tok.vocab.tokens, tmp_path_factory.mktemp("peers") / "tokenizer.json")
    try:
        import tokenizers

        hf = tokenizers.Tokenizer.from_file(str(peer_json))
        found["hf"] = lambda text: hf.encode(text, add_special_tokens=False).ids
    except ImportError:
        pass
    try:  # optional peer (pip install tokie); its ids are not always tiktoken's
        import tokie

        tk = tokie.Tokenizer.from_json(str(peer_json))
        found["tokie"] = lambda text: tk.encode(text, add_special_tokens=False).ids
        found["tokie-2threads"] = ("batch", lambda docs: [e.ids for e in tk.encode_batch(docs, add_special_tokens=False)])
    except (ImportError, TypeError):
        pass
    try:  # optional peer (pip install bpe-openai): its built-in cl100k_base, the Rust backend
        from bpe_openai import _bindings

        bpe = _bindings.tokenizer_for_encoding("cl100k_base")
        found["bpe-openai"] = bpe.encode
    except (ImportError, AttributeError):
        pass
    try:  # optional peer (pip install nanotok: see the README's Performance section)
        import nanotok

        # As shipped: its per-piece cache (16 k slots, kept across calls) stays on, as a user
        # would have it; the same tokenizer.json as HF and tokie. No threaded row: nanotok
        # 0.1.0's encode_batch is a loop over encode on the calling thread, GIL held.
        nt = nanotok.Tokenizer.from_file(str(peer_json))
        found["nanotok"] = nt.encode
    except ImportError:
        pass
    return found


@pytest.mark.parametrize("kind", list(TEXTS))
@pytest.mark.parametrize("lib", LIBS)
def test_encode(benchmark, encoders, lib, kind):
    if lib not in encoders:
        pytest.skip(f"{lib} is not installed")
    docs = documents(TEXTS[kind][:4_000_000])
    encode = encoders[lib]
    benchmark.group = f"encode {kind} (warm: same documents every round)"
    benchmark.extra_info["MB"] = sum(len(d.encode()) for d in docs) / 1e6
    benchmark.extra_info["ids_identical"] = _ids_identical(encoders, lib, kind, docs)
    if isinstance(encode, tuple):  # a batch API over all documents
        benchmark.pedantic(encode[1], args=(docs,), rounds=ROUNDS, iterations=1)
    else:
        benchmark.pedantic(lambda: [encode(d) for d in docs], rounds=ROUNDS, iterations=1)


# Documents no library has encoded before: the training corpus's English and code (none of it is
# in the eval files above), one fresh set per round, so a cache kept across calls helps only as
# much as it would on a stream of new documents (common words recur; whole documents do not).
UNSEEN = {"english": (("en",), 2), "code": (("code-python", "code-c", "code-go"), 1)}


@pytest.fixture(scope="module")
def unseen_sets():
    sets = {}
    for kind, (languages, megabytes) in UNSEEN.items():
        docs = documents(training_text_of(languages, megabytes * (ROUNDS + 2)))
        per_set, cut, current = megabytes * 1_000_000, [], []
        for doc in docs:
            current.append(doc)
            if sum(map(len, current)) >= per_set:
                cut.append(current)
                current = []
        sets[kind] = cut[:ROUNDS + 1]  # the last set checks the ids, the others are timed
    return sets


@pytest.mark.parametrize("kind", list(UNSEEN))
@pytest.mark.parametrize("lib", LIBS)
def test_encode_unseen(benchmark, encoders, unseen_sets, lib, kind):
    if lib not in encoders or lib == "cybpe-regex":
        pytest.skip(f"{lib} is not installed" if lib not in encoders else "slow, and not a cache question")
    sets = unseen_sets[kind]
    if len(sets) < ROUNDS + 1:
        pytest.skip(f"the training corpus has too little {kind} for {ROUNDS} fresh sets")
    encode = encoders[lib]
    benchmark.group = f"encode {kind}, a fresh document set each round"
    benchmark.extra_info["MB"] = sum(len(d.encode()) for d in sets[0]) / 1e6
    benchmark.extra_info["ids_identical"] = _ids_identical(encoders, lib, f"unseen {kind}", sets[-1])
    timed = iter(sets[:ROUNDS])
    run = encode[1] if isinstance(encode, tuple) else (lambda docs: [encode(d) for d in docs])
    benchmark.pedantic(run, setup=lambda: ((next(timed),), {}), rounds=ROUNDS, iterations=1)


SHORT_TEXT = "Hello world, it's me"  # 20 characters: what a chat turn or a label costs per call


@pytest.mark.parametrize("lib", [lib for lib in LIBS if "threads" not in lib])
def test_short_call(benchmark, encoders, lib):
    """Per-call cost on a 20-character text (one call, list output): the wrapper's overhead."""
    if lib not in encoders:
        pytest.skip(f"{lib} is not installed")
    benchmark.group = "encode one 20-character text"
    encode = encoders[lib]
    reference = encoders["tiktoken" if "tiktoken" in encoders else "cybpe"](SHORT_TEXT)
    benchmark.extra_info["ids_identical"] = list(encode(SHORT_TEXT)) == list(reference)
    benchmark.pedantic(encode, args=(SHORT_TEXT,), rounds=200, iterations=1000, warmup_rounds=5)


_REFERENCE: dict[str, list[list[int]]] = {}


def _ids_identical(encoders, lib: str, kind: str, docs: list[str]) -> bool:
    """Whether ``lib`` gives tiktoken's ids (cybpe's when tiktoken is absent) on these documents."""
    reference = "tiktoken" if "tiktoken" in encoders else "cybpe"
    if kind not in _REFERENCE:
        _REFERENCE[kind] = [encoders[reference](d) for d in docs]
    encode = encoders[lib]
    got = encode[1](docs) if isinstance(encode, tuple) else [encode(d) for d in docs]
    return [list(ids) for ids in got] == _REFERENCE[kind]


def _sha256_rounds(_: int = 0) -> None:
    for _ in range(4):
        hashlib.sha256(_SHA_DATA).digest()


_SHA_DATA = b"x" * (8 << 20)


@pytest.mark.parametrize("threads", [1, 2])
def test_machine_thread_scaling(benchmark, threads):
    """What two threads give on this machine right now, for reference: sha256 of 2 x 32 MB
    (GIL released, no shared memory). A shared or throttled second core shows here first."""
    benchmark.group = "machine: sha256, 1 vs 2 threads"
    if threads == 1:
        benchmark.pedantic(lambda: [_sha256_rounds() for _ in range(2)], rounds=ROUNDS, iterations=1)
    else:
        def both():
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(_sha256_rounds, range(2)))
        benchmark.pedantic(both, rounds=ROUNDS, iterations=1)
