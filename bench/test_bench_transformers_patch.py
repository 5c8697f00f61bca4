"""transformers' fast tokenizer unpatched, after ``cybpe.patch_transformers()`` and after
``fastokens.patch_transformers()`` (issue 43, item 3), on the calls users make. The headline
rows are one pass over text no engine has seen; the warm rows, which repeat their inputs (so
both patched engines' piece caches hold nearly every piece), are secondary:

* ``single, unseen`` (headline): ``tok(text)`` once on each of the 16,000-character documents
  of the shared evaluation texts in English, Japanese, Russian and Hindi, from the second
  document of each text on (at most ``BENCH_TP_UNSEEN`` per language), one per round;
* ``batch, unseen`` (headline): ``tok(batch)`` once on each of up to five batches of 1,000
  texts of 400 characters (the four texts' pieces taken in turn), from the second batch on;
* ``single, warm`` and ``batch, warm``: the first document of each text in turn, and the first
  batch, again and again; ``batch with offsets``: the first batch with
  ``return_offsets_mapping=True`` and each text's word ids (fastokens does not track offsets);
* ``overhead``: ``tok("a")``, and the backend's own ``encode_batch(["a"])``: the difference is
  what the transformers layer costs per call, which no engine removes.

For Llama 3 and Qwen3 (the shared folders). Every variant's ids are checked against the
unpatched tokenizer's: before timing on the warm rows, after it on the unseen ones (checking
first would show the engines the text). Before an unseen row, a short text builds the engine.
Each benchmark leaves no patch on: cybpe's is put on and taken off around it (the tokenizer
object is the unpatched one: the patch covers it), and fastokens' tokenizer is loaded while
fastokens' patch is on, which is then taken off again (fastokens swaps the backend of the
tokenizers it loads, so that object stays on fastokens). The two patches are never on together.

    CYBPE_SHARED=../shared python -m pytest bench/test_bench_transformers_patch.py \\
        --benchmark-group-by=group --benchmark-columns=min,median,mean,rounds

``BENCH_TP_DOC_CHARS`` (16000), ``BENCH_TP_BATCH`` (1000), ``BENCH_TP_UNSEEN`` (12) and
``BENCH_TP_VOCABS`` (``llama3,qwen3``) change the sizes; ``BENCH_TP_DOC_CHARS=300
BENCH_TP_BATCH=8 BENCH_TP_UNSEEN=2`` checks that it runs. ``extra_info`` holds each row's MB/s
(bytes over the total time of its rounds).
"""

from __future__ import annotations

import itertools
import os
import warnings

import pytest

import cybpe
from bench_support import shared_path

DOC_CHARS = int(os.environ.get("BENCH_TP_DOC_CHARS", "16000"))
BATCH = int(os.environ.get("BENCH_TP_BATCH", "1000"))
UNSEEN = int(os.environ.get("BENCH_TP_UNSEEN", "12"))
UNSEEN_BATCHES = 4
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
    """(warm documents, unseen documents, warm batch, unseen batches)."""
    shared = _shared()
    warm, unseen, by_lang = [], [], []
    for lang in LANGS:
        body = (shared / "corpora" / "eval" / "docs" / f"{lang}.txt").read_text(encoding="utf-8")
        docs = [body[i:i + DOC_CHARS] for i in range(0, len(body) - DOC_CHARS + 1, DOC_CHARS)]
        warm += docs[:1]
        unseen += docs[1:1 + UNSEEN]
        by_lang.append([body[i:i + 400] for i in range(0, len(body), 400)])
    pieces = [p for turn in itertools.zip_longest(*by_lang) for p in turn if p is not None]
    batches = [pieces[i:i + BATCH] for i in range(0, len(pieces) - BATCH + 1, BATCH)][:1 + UNSEEN_BATCHES]
    return warm, unseen, batches[0], batches[1:]


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


def _size(inputs) -> int:
    """UTF-8 bytes of a list of texts or of batches."""
    return sum(_size(x) if isinstance(x, list) else len(x.encode("utf-8")) for x in inputs)


def _one_pass(benchmark, variant, tok, reference, inputs, group):
    """``tok`` once on each input, one per round (cybpe's patch on for its variant); the ids
    are checked against ``reference`` after, unpatched."""
    got = []
    turn = iter(inputs)

    def one():
        got.append(tok(next(turn))["input_ids"])
    with _Patch(variant):
        tok("Building the engine, on a text no row measures.")
        benchmark.group = group
        benchmark.pedantic(one, rounds=len(inputs), iterations=1, warmup_rounds=0)
    # (--benchmark-disable runs one round)
    assert got and got == [reference(x)["input_ids"] for x in inputs[:len(got)]], f"{variant}: ids differ"
    benchmark.extra_info.update(mb_s=_size(inputs) / benchmark.stats.stats.total / 1e6, rows="headline")


# The variants of one kind run one after the other (variant varies fastest): their ratios
# compare runs seconds apart on a host whose speed drifts.
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["single 16 KB call", "batch of 1000"])
def test_unseen(benchmark, tokenizers_by_variant, documents, variant, kind):
    """The headline: each document (or batch) once."""
    vocab, tok, reference = _tok(tokenizers_by_variant, variant)
    _, docs, _, batches = documents
    if kind.startswith("single"):
        inputs, group = docs, f"transformers single {DOC_CHARS // 1000} K-character call, unseen documents: {vocab}"
    else:
        inputs, group = batches, f"transformers batch of {len(batches[0]) if batches else 0}, unseen texts: {vocab}"
    if not inputs:
        pytest.skip("the texts give no unseen input of this kind")
    _one_pass(benchmark, variant, tok, reference, inputs, group)
    benchmark.extra_info.update(variant=variant, vocab=vocab)


@pytest.mark.parametrize("variant", VARIANTS)
def test_single_16kb_call_warm(benchmark, tokenizers_by_variant, documents, variant):
    vocab, tok, reference = _tok(tokenizers_by_variant, variant)
    docs, _, _, _ = documents
    expected = [reference(d)["input_ids"] for d in docs]
    with _Patch(variant):
        assert [tok(d)["input_ids"] for d in docs] == expected, f"{variant}: ids differ"
        turn = iter(range(1 << 62))

        def one():
            return tok(docs[next(turn) % len(docs)])
        benchmark.group = f"transformers single {DOC_CHARS // 1000} K-character call, warm (secondary): {vocab}"
        benchmark.pedantic(one, rounds=max(20, 8 * len(docs)), iterations=1, warmup_rounds=len(docs))
    benchmark.extra_info.update(variant=variant, vocab=vocab, rows="warm",
                                mb_s=_size(docs) / len(docs) / benchmark.stats.stats.mean / 1e6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_of_1000_warm(benchmark, tokenizers_by_variant, documents, variant):
    vocab, tok, reference = _tok(tokenizers_by_variant, variant)
    _, _, batch, _ = documents
    expected = reference(batch)["input_ids"]
    with _Patch(variant):
        assert tok(batch)["input_ids"] == expected, f"{variant}: ids differ"
        benchmark.group = f"transformers batch of {len(batch)}, warm (secondary): {vocab}"
        benchmark.pedantic(lambda: tok(batch), rounds=8, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(variant=variant, vocab=vocab, rows="warm",
                                mb_s=_size(batch) / benchmark.stats.stats.mean / 1e6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_with_offsets_warm(benchmark, tokenizers_by_variant, documents, variant):
    """``tok(batch, return_offsets_mapping=True)`` and every text's word ids (what token
    classification asks for), the first batch again and again. fastokens does not track
    offsets (it raises), so its row is skipped."""
    vocab, tok, reference = _tok(tokenizers_by_variant, variant)
    _, _, batch, _ = documents

    def call(t):
        out = t(batch, return_offsets_mapping=True)
        return out["input_ids"], out["offset_mapping"], [out.word_ids(i) for i in range(len(batch))]
    expected = call(reference)
    with _Patch(variant):
        try:
            got = call(tok)
        except NotImplementedError as exc:
            pytest.skip(f"{variant}: {exc}")
        assert got == expected, f"{variant}: ids, offsets or word ids differ"
        benchmark.group = f"transformers batch of {len(batch)} with offsets and word ids, warm (secondary): {vocab}"
        benchmark.pedantic(lambda: call(tok), rounds=8, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(variant=variant, vocab=vocab, rows="warm",
                                mb_s=_size(batch) / benchmark.stats.stats.mean / 1e6)


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
