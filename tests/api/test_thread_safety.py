"""The thread-safety statements of the README, each checked against a one-thread reference.

Every public type says which methods may run in several threads at once (README, "Errors,
limits and threads"). Each test runs those methods from several threads on shared objects and
compares every result with the result of the same call made alone.
"""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import cybpe
from cybpe.errors import ConcurrentUseError

THREADS = 4
TEXTS = [f"text {i}: Hello world, the quick brown fox {i * 37} jumps. Ünïcödé 中文 <|eot|> 🙂 "
         * (1 + i % 7) for i in range(200)]


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return cybpe.train(TEXTS, 400, special_tokens=["<|eot|>"], progress=False)


def _run_in_threads(work, items):
    """``work(item)`` for every item, on THREADS threads started together; results in order."""
    start = threading.Barrier(THREADS)

    def one_thread(k):
        start.wait()
        return [work(item) for item in items[k::THREADS]]

    with ThreadPoolExecutor(THREADS) as pool:
        parts = list(pool.map(one_thread, range(THREADS)))
    out = [None] * len(items)
    for k, part in enumerate(parts):
        out[k::THREADS] = part
    return out


def test_tokenizer_methods_are_thread_safe(tok):
    calls = {
        "encode": lambda t: tok.encode(t, allowed_special="all"),
        "encode_ordinary": tok.encode_ordinary,
        "count": tok.count,
        "encode_to_numpy": lambda t: list(tok.encode_to_numpy(t, disallowed_special=())),
        "decode": lambda t: tok.decode(tok.encode(t, allowed_special="all")),
        "encode_batch": lambda t: tok.encode_batch([t, t[::-1]], num_threads=2, allowed_special="all"),
        "encode_ordinary_batch": lambda t: tok.encode_ordinary_batch([t, t[:5]], num_threads=2),
        "varying specials": lambda t: tok.encode(t, allowed_special={"<|eot|>"} if len(t) % 2 else set(),
                                                 disallowed_special=()),
        "pickle": lambda t: pickle.loads(pickle.dumps(tok)).encode(t, disallowed_special=()),
    }
    for name, call in calls.items():
        reference = [call(t) for t in TEXTS]
        assert _run_in_threads(call, TEXTS) == reference, name


def test_pretokenizer_split_is_thread_safe():
    for name in ("cl100k", "gpt2", "gpt4-digits-rtl"):
        pre = cybpe.get_pretokenizer(name)
        reference = [pre.split(t) for t in TEXTS]
        assert _run_in_threads(pre.split, TEXTS) == reference, name
        regex_only = pre.with_regex_only()
        assert _run_in_threads(regex_only.split, TEXTS) == reference, name


def test_registry_functions_are_thread_safe():
    reference = [cybpe.get_pretokenizer(n) for n in ("cl100k", "o200k", "gpt2", "abugida")] * 10
    found = _run_in_threads(lambda p: cybpe.get_pretokenizer(p.name), reference)
    assert found == reference
    listing = cybpe.list_pretokenizers()
    assert _run_in_threads(lambda _: cybpe.list_pretokenizers(), range(8)) == [listing] * 8


def test_encoding_registry_builds_once_across_threads(tok, tmp_path, monkeypatch):
    """Concurrent get_encoding calls build a registered encoding once and share it."""
    import hashlib
    import types

    from cybpe.encodings import EncodingFile
    from cybpe.encodings.registry import forget_built

    tok.to_tiktoken(tmp_path / "threads_base.tiktoken")
    digest = hashlib.sha256((tmp_path / "threads_base.tiktoken").read_bytes()).hexdigest()
    monkeypatch.setenv("CYBPE_ENCODINGS_DIR", str(tmp_path))
    builds = []

    def build(path):
        builds.append(path)
        return cybpe.Tokenizer.from_tiktoken(path, "cl100k", {})

    plugin = types.ModuleType("threads_plugin")
    plugin.cybpe_register_encodings = cybpe.hookimpl(
        lambda register: register("threads_base", files=[EncodingFile("threads_base.tiktoken", digest)],
                                  build=build))
    cybpe.register_plugin(plugin, "threads-plugin")
    try:
        found = _run_in_threads(lambda _: cybpe.get_encoding("threads_base"), range(16))
        assert len(builds) == 1 and all(enc is found[0] for enc in found)
        names = cybpe.list_encoding_names()
        assert _run_in_threads(lambda _: cybpe.list_encoding_names(), range(8)) == [names] * 8
        enc = found[0]
        texts = TEXTS[:40]
        for call in (lambda t: enc.encode_with_unstable(t[:60], disallowed_special=()),
                     lambda t: enc.decode_batch([enc.encode_ordinary(t)] * 3, num_threads=2)):
            assert _run_in_threads(call, texts) == [call(t) for t in texts]
    finally:
        cybpe.unregister_plugin("threads-plugin")
        forget_built()


def test_chunk_counts_readers_during_an_update():
    """Reads wait for the update in progress: every read sees the counts of a whole number of
    update() calls, and the final counts equal one thread's."""
    counts = cybpe.ChunkCounts("cl100k", ["<|eot|>"])
    one_pass = cybpe.ChunkCounts("cl100k", ["<|eot|>"]).update(TEXTS)
    rounds = 6
    done = threading.Event()

    def writer():
        for _ in range(rounds):
            counts.update(TEXTS)
        done.set()

    snapshots = []

    def reader(_):
        while not done.is_set():
            items = counts.items()
            snapshots.append(sum(n for _, n in items))
            assert [c for c, _ in counts.items()] == sorted(c for c, _ in counts.items())
            counts.sorted_arrays()
            counts.most_common(3)
            pickle.dumps(counts)
        return True

    thread = threading.Thread(target=writer)
    thread.start()
    with ThreadPoolExecutor(3) as pool:
        assert all(pool.map(reader, range(3)))
    thread.join()
    assert all(total % one_pass.total == 0 for total in snapshots)
    expected = one_pass.copy()
    for _ in range(rounds - 1):
        expected += one_pass
    assert counts == expected


def test_chunk_counts_writers_one_at_a_time():
    """A second concurrent writer gets ConcurrentUseError and counts nothing; the parallel way
    (empty_like per thread, then +) gives the one-thread counts."""
    counts = cybpe.ChunkCounts("cl100k")

    def writer(batch):
        try:
            counts.update(batch)
            return batch
        except ConcurrentUseError:
            return None

    batches = [TEXTS * 5 for _ in range(THREADS)]
    written = [b for b in _run_in_threads(writer, batches) if b is not None]
    assert len(written) >= 1
    # every call either counted its whole batch or nothing: the counts are the written batches'
    reference = cybpe.ChunkCounts("cl100k").update(TEXTS * 5)
    assert counts == sum([reference] * len(written))
    assert counts.total == reference.total * len(written)
    parts = _run_in_threads(lambda batch: counts.empty_like().update(batch), [TEXTS[k::4] for k in range(4)])
    assert sum(parts) == cybpe.ChunkCounts("cl100k").update(TEXTS)


def test_stream_decoders_one_per_thread(tok):
    """StreamDecoder is not shared between threads (README); one per thread is safe."""
    ids = [tok.encode(t, allowed_special="all") for t in TEXTS]

    def decode_in_pieces(sequence):
        decoder = tok.stream_decoder()
        return "".join(decoder.feed(sequence[k:k + 3]) for k in range(0, len(sequence), 3)) + decoder.flush()

    assert _run_in_threads(decode_in_pieces, ids) == [tok.decode(s) for s in ids]


def test_training_in_threads_is_deterministic():
    reference = cybpe.train(TEXTS, 300, progress=False)
    results = _run_in_threads(lambda _: cybpe.train(TEXTS, 300, progress=False), range(THREADS))
    assert all(r == reference for r in results)
    counts = cybpe.ChunkCounts("cl100k").update(TEXTS)
    results = _run_in_threads(lambda _: cybpe.train(counts, 300, progress=False), range(THREADS))
    assert all(r.vocab == reference.vocab for r in results)


def test_parallel_set_shared_between_threads():
    """ParallelSet is immutable (README): one instance trains in several threads at once."""
    parallel = cybpe.ParallelSet({"a": "\n".join(TEXTS[:20]), "b": "\n".join(t.upper() for t in TEXTS[:20])})
    corpus = {"a": TEXTS[20:60], "b": [t.upper() for t in TEXTS[60:100]]}
    reference = cybpe.train(corpus, 320, parity=parallel)
    results = _run_in_threads(lambda _: cybpe.train(corpus, 320, parity=parallel), range(THREADS))
    assert all(r.vocab == reference.vocab for r in results)
    assert parallel.languages == ["a", "b"] and parallel.texts["a"] == "\n".join(TEXTS[:20])


def test_patched_transformers_tokenizer_shared_between_threads(tmp_path):
    """patch_transformers (docs/guide/errors.md): a patched tokenizer's encode and decode calls,
    the lazy fields of one Encoding read from every thread at once, and patching / unpatching
    while other threads encode, all give the unpatched one-thread results."""
    pytest.importorskip("transformers", reason="transformers is not installed (the test extra has it)")
    from hfpatch_support import load, make_trained_folder

    hf = load(make_trained_folder(tmp_path / "trained"))
    texts = TEXTS[:40]

    # one set of settings for every call: transformers writes them into the shared Rust
    # tokenizer before each call, so calls asking for different ones race (HF's engine too)
    settings = {"padding": True, "truncation": True, "max_length": 24, "stride": 4}

    def call(t):
        batch = hf([t, t[::-1]], return_overflowing_tokens=True, return_offsets_mapping=True, **settings)
        return (hf(t, **settings)["input_ids"], {k: batch[k] for k in batch}, batch.tokens(0),
                hf.decode(batch["input_ids"][0], skip_special_tokens=True))

    cybpe.unpatch_transformers()
    reference = [call(t) for t in texts]
    one = hf._tokenizer.encode(texts[0], texts[1])
    fields = (one.tokens, one.offsets, one.word_ids, one.type_ids, one.sequence_ids)
    try:
        with cybpe.transformers_patched():
            assert _run_in_threads(call, texts) == reference
            shared = hf._tokenizer.encode(texts[0], texts[1])  # filled in lazily, by the first reader
            assert type(shared).__module__ == "cybpe.compat.hf_encoding"
            reads = _run_in_threads(lambda _: (shared.tokens, shared.offsets, shared.word_ids,
                                               shared.type_ids, shared.sequence_ids), range(THREADS * 4))
            assert reads == [fields] * (THREADS * 4)

        def toggle_or_call(k):
            if k % 8 == 0:
                cybpe.patch_transformers() if k % 16 == 0 else cybpe.unpatch_transformers()
                return None
            return call(texts[k % len(texts)])
        got = _run_in_threads(toggle_or_call, list(range(64)))
        assert [g for g in got if g is not None] == [reference[k % len(texts)] for k in range(64) if k % 8]
    finally:
        cybpe.unpatch_transformers()
def test_mode_objects_shared_between_threads():
    """SuperBPE and Prune are immutable (docs/guide/errors.md): one instance trains in several
    threads at once, each result equal to one thread's."""
    for mode in (cybpe.SuperBPE(from_=300), cybpe.Prune(exposure=3)):
        reference = cybpe.train(TEXTS[:60], 340, mode=mode, progress=False)
        results = _run_in_threads(lambda _: cybpe.train(TEXTS[:60], 340, mode=mode, progress=False),
                                  range(THREADS))
        assert all(r.vocab == reference.vocab for r in results)
