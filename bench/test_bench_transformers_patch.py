"""transformers' fast tokenizer unpatched, after ``cybpe.patch_transformers()`` and after
``fastokens.patch_transformers()`` (issue 43, item 3), on the calls users make:

* ``single``: ``tok(text)`` on one 16 KB document per call, the documents taken in turn from
  the shared evaluation texts in English, Japanese, Russian and Hindi;
* ``batch``: ``tok(batch)`` of 1,000 texts (pieces of the same documents);
* ``overhead``: ``tok("a")``, and the backend's own ``encode_batch(["a"])``: the difference is
  what the transformers layer costs per call, which no engine removes.

For Llama 3 and Qwen3 (the shared folders). Every variant's ids are checked against the
unpatched tokenizer's before it is timed. Each benchmark leaves no patch on: cybpe's is put on
and taken off around it (the tokenizer object is the unpatched one: the patch covers it), and
fastokens' tokenizer is loaded while fastokens' patch is on, which is then taken off again
(fastokens swaps the backend of the tokenizers it loads, so that object stays on fastokens).
The two patches are never on together.

    CYBPE_SHARED=../shared python -m pytest bench/test_bench_transformers_patch.py \\
        --benchmark-group-by=group --benchmark-columns=min,median,mean,rounds

``BENCH_TP_DOC_CHARS`` (16000), ``BENCH_TP_BATCH`` (1000) and ``BENCH_TP_VOCABS``
(``llama3,qwen3``) change the sizes; ``BENCH_TP_DOC_CHARS=300 BENCH_TP_BATCH=8`` checks that it
runs. ``extra_info`` holds each row's MB/s.
"""

from __future__ import annotations

import os
import warnings

import pytest

import cybpe
from bench_support import shared_path

DOC_CHARS = int(os.environ.get("BENCH_TP_DOC_CHARS", "16000"))
BATCH = int(os.environ.get("BENCH_TP_BATCH", "1000"))
VOCABS = [v for v in os.environ.get("BENCH_TP_VOCABS", "llama3,qwen3").split(",") if v]
LANGS = ("en", "ja", "ru", "hi")
VARIANTS = ("unpatched", "cybpe", "fastokens")

transformers = pytest.importorskip("transformers")


def _shared():
    path = shared_path()
    if path is None:
        pytest.skip("the shared folder is absent (set CYBPE_SHARED)")
    return path


@pytest.fixture(scope="module")
def documents():
    shared = _shared()
    docs, pieces = [], []
    for lang in LANGS:
        body = (shared / "corpora" / "eval" / "docs" / f"{lang}.txt").read_text(encoding="utf-8")
        docs += [body[i:i + DOC_CHARS] for i in range(0, len(body) - DOC_CHARS + 1, DOC_CHARS)][:4]
        pieces += [body[i:i + 400] for i in range(0, len(body), 400)]
    batch = (pieces * (BATCH // max(len(pieces), 1) + 1))[:BATCH]
    return docs, batch


def _load(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module", params=VOCABS)
def tokenizers_by_variant(request):
    """{variant: tokenizer} for one vocabulary; fastokens' only when it is installed."""
    folder = _shared() / "vocab" / request.param
    cybpe.unpatch_transformers()
    plain = _load(folder)
    out = {"unpatched": plain, "cybpe": plain}
    try:
        import fastokens
    except ImportError:
        fastokens = None
    if fastokens is not None:
        fastokens.patch_transformers()
        try:
            out["fastokens"] = _load(folder)
        finally:
            fastokens.unpatch_transformers()
    return request.param, out


class _Patch:
    """cybpe's patch on for the block when the variant is cybpe."""

    def __init__(self, variant: str) -> None:
        self.on = variant == "cybpe"

    def __enter__(self) -> None:
        if self.on:
            cybpe.patch_transformers()

    def __exit__(self, *exc) -> None:
        cybpe.unpatch_transformers()


def _tok(tokenizers_by_variant, variant):
    vocab, by_variant = tokenizers_by_variant
    if variant not in by_variant:
        pytest.skip(f"{variant} is not installed")
    return vocab, by_variant[variant], by_variant["unpatched"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_single_16kb_call(benchmark, tokenizers_by_variant, documents, variant):
    vocab, tok, reference = _tok(tokenizers_by_variant, variant)
    docs, _ = documents
    expected = [reference(d)["input_ids"] for d in docs]
    with _Patch(variant):
        assert [tok(d)["input_ids"] for d in docs] == expected, f"{variant}: ids differ"
        turn = iter(range(1 << 62))

        def one():
            return tok(docs[next(turn) % len(docs)])
        benchmark.group = f"transformers single {DOC_CHARS // 1000} KB call: {vocab}"
        benchmark.pedantic(one, rounds=max(20, 4 * len(docs)), iterations=1, warmup_rounds=len(docs))
    size = sum(len(d.encode("utf-8")) for d in docs) / len(docs)
    benchmark.extra_info.update(variant=variant, vocab=vocab, mb_s=size / benchmark.stats.stats.mean / 1e6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_of_1000(benchmark, tokenizers_by_variant, documents, variant):
    vocab, tok, reference = _tok(tokenizers_by_variant, variant)
    _, batch = documents
    expected = reference(batch)["input_ids"]
    with _Patch(variant):
        assert tok(batch)["input_ids"] == expected, f"{variant}: ids differ"
        benchmark.group = f"transformers batch of {len(batch)}: {vocab}"
        benchmark.pedantic(lambda: tok(batch), rounds=8, iterations=1, warmup_rounds=1)
    size = sum(len(t.encode("utf-8")) for t in batch)
    benchmark.extra_info.update(variant=variant, vocab=vocab, mb_s=size / benchmark.stats.stats.mean / 1e6)


@pytest.mark.parametrize("layer", ["tok('a')", "backend.encode_batch(['a'])"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_per_call_overhead(benchmark, tokenizers_by_variant, variant, layer):
    """A one-character call: nearly all of it is the layer around the engine."""
    vocab, tok, reference = _tok(tokenizers_by_variant, variant)
    with _Patch(variant):
        backend = tok.backend_tokenizer
        call = (lambda: tok("a")) if layer == "tok('a')" else (lambda: backend.encode_batch(["a"]))
        assert tok("a")["input_ids"] == reference("a")["input_ids"]
        benchmark.group = f"transformers per-call overhead: {vocab}"
        benchmark.pedantic(call, rounds=2000, iterations=1, warmup_rounds=50)
    benchmark.extra_info.update(variant=variant, vocab=vocab, layer=layer)
