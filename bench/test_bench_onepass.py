"""The encode headline: one pass over documents no library has seen, every eval language.

For each text of ``eval/docs`` (15 languages) and ``eval/code`` (C, Python), cut into 16 KB
documents, and for each vocabulary (cl100k_base, o200k_base, Llama 3; Qwen3 on request), every installed library
encodes every document exactly once, one thread, list output: round r encodes documents r,
r + R, r + 2R, ... (R = ``BENCH_ROUNDS``), so no round repeats a document and a cache kept
across calls helps only as much as it would on a stream of new documents. The ids of every
document are compared with the reference (tiktoken for the OpenAI vocabularies, HF tokenizers
for Llama 3 and Qwen3); a library whose ids differ is reported as such and left out of the ranking.

Each row's ``extra_info`` holds ``pass_mb_s`` (all bytes over the summed round times: the
headline), ``ids_identical``, the library's version and, for one-thread rows,
``thread_over_wall`` (the timing thread's CPU time over the wall time: well below 1 when
something else took the core). ``bench/onepass_table.py`` turns the
JSON into the README's table of ratios (cybpe over the fastest exact peer, cell by cell).

    CYBPE_SHARED=../shared python -m pytest bench/test_bench_onepass.py \\
        --benchmark-group-by=group --benchmark-json=onepass.json
    python bench/onepass_table.py onepass.json

``BENCH_ROUNDS`` (default 5) rounds per cell; ``BENCH_PASS_MB`` (default 1.0) caps the text
taken from each file. ``BENCH_VOCABS`` / ``BENCH_LANGS`` (comma lists) narrow the run;
``BENCH_VOCABS=cl100k_base,o200k_base,llama3,qwen3`` adds Qwen3's folder (the transformers
patch's second vocabulary: a byte-level BPE with NFC and single-digit pieces). Peers
that are not installed are skipped by name; ``pip install -e ".[bench]"`` installs them all
but nanotok, which needs a build of its own (README, Performance).
"""

from __future__ import annotations

import gc
import importlib.metadata
import os
import time
from pathlib import Path

import pytest

import cybpe
from bench_support import peer_tokenizer_json, shared_path

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
PASS_BYTES = int(float(os.environ.get("BENCH_PASS_MB", "1.0")) * 1_000_000)
DOC_CHARS = 16_000
VOCABS = [v for v in os.environ.get("BENCH_VOCABS", "cl100k_base,o200k_base,llama3").split(",") if v]
LIBS = ["cybpe", "cybpe-2threads", "tiktoken", "hf", "fastokens", "quicktok", "tokie", "bpe-openai", "nanotok"]
# The reference each vocabulary's ids are checked against (cybpe's own when it is missing).
REFERENCE = {"cl100k_base": "tiktoken", "o200k_base": "tiktoken", "llama3": "hf", "qwen3": "hf"}
#: the vocabularies read from a shared tokenizer.json folder of that name (the others: .tiktoken)
HF_FOLDERS = ("llama3", "qwen3")
VERSIONS = {"cybpe": "cybpe", "cybpe-2threads": "cybpe", "tiktoken": "tiktoken", "hf": "tokenizers",
            "fastokens": "fastokens", "quicktok": "quicktok-v1", "tokie": "tokie",
            "bpe-openai": "bpe-openai", "nanotok": "nanotok"}


def eval_texts() -> dict[str, Path]:
    shared = shared_path()
    if shared is None:
        return {}
    ev = shared / "corpora" / "eval"
    found = {p.stem: p for p in sorted((ev / "docs").glob("*.txt"))}
    found.update({f"code-{p.stem}": p for p in sorted((ev / "code").glob("*.txt"))})
    wanted = [lang for lang in os.environ.get("BENCH_LANGS", "").split(",") if lang]
    return {k: v for k, v in found.items() if not wanted or k in wanted}


TEXTS = eval_texts()


def documents(text: str) -> list[str]:
    """16 KB documents, cut after a line end, up to PASS_BYTES of text."""
    out, start, total = [], 0, 0
    while start < len(text) and total < PASS_BYTES:
        end = text.find("\n", start + DOC_CHARS)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        total += len(out[-1].encode())
        start = end
    return out


def _version(lib: str) -> str:
    try:
        return importlib.metadata.version(VERSIONS[lib])
    except importlib.metadata.PackageNotFoundError:
        return "?"


class Encoders:
    """Each library's one-text encode function per vocabulary, built once, None if it cannot."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.built: dict[tuple[str, str], object] = {}
        self.reason: dict[tuple[str, str], str] = {}

    def get(self, vocab: str, lib: str):
        key = (vocab, lib)
        if key not in self.built:
            try:
                self.built[key] = self._make(vocab, lib)
                if self.built[key] is not None:  # one-time set-up (pattern JIT, lazy tables) is not the pass
                    encode = self.built[key]
                    encode[1](["warm up, 1 2"]) if isinstance(encode, tuple) else encode("warm up, 1 2")
            except ImportError as exc:
                self.built[key], self.reason[key] = None, f"{lib} is not installed ({exc.name})"
            except Exception as exc:  # a peer that cannot load this vocabulary is reported, not fatal
                self.built[key], self.reason[key] = None, f"{lib} cannot load {vocab}: {exc!r}"[:300]
            if self.built[key] is None and key not in self.reason:
                self.reason[key] = f"{lib} has no {vocab}"
        return self.built[key]

    def _paths(self, vocab: str) -> tuple[Path, Path | None]:
        """(cybpe's source file, the tokenizer.json peers load)."""
        v = shared_path() / "vocab"
        if vocab in HF_FOLDERS:
            return v / vocab / "tokenizer.json", v / vocab / "tokenizer.json"
        if vocab == "o200k_base":
            return v / "o200k_base.tiktoken", v / "gpt4o-hf" / "tokenizer.json"
        source = v / f"{vocab}.tiktoken"
        peer = self.tmp / f"{vocab}.json"
        if not peer.exists():
            tok = self.cybpe_tokenizer(vocab)
            peer_tokenizer_json(tok.vocab.tokens, peer)
        return source, peer

    def cybpe_tokenizer(self, vocab: str, row: str = "cybpe") -> cybpe.Tokenizer:
        """cybpe's tokenizer for one row: each row its own encoder, so that no row reads the
        thread piece caches another row filled with the same documents (they are keyed by
        encoder; the batch's calling thread is one of its two)."""
        key = (vocab, f"{row}-tokenizer")
        if key not in self.built:
            source = shared_path() / "vocab"
            self.built[key] = (cybpe.Tokenizer.from_hf(source / vocab / "tokenizer.json") if vocab in HF_FOLDERS
                               else cybpe.Tokenizer.from_tiktoken(source / f"{vocab}.tiktoken"))
        return self.built[key]

    def _make(self, vocab: str, lib: str):
        source, peer = self._paths(vocab)
        if lib == "cybpe":
            return self.cybpe_tokenizer(vocab).encode_ordinary
        if lib == "cybpe-2threads":
            tok = self.cybpe_tokenizer(vocab, lib)
            return ("batch", lambda docs: tok.encode_ordinary_batch(docs, num_threads=2))
        if lib == "tiktoken":
            import tiktoken

            if vocab in HF_FOLDERS:
                return None
            tok = self.cybpe_tokenizer(vocab)
            # The shared ranks and the encoding's pattern string (cybpe's is tiktoken's own).
            enc = tiktoken.Encoding(vocab, pat_str=tok.pretokenizer.pattern, special_tokens={},
                                    mergeable_ranks={b: i for i, b in enumerate(tok.vocab.tokens)})
            return enc.encode_ordinary
        if lib == "hf":
            import tokenizers

            hf = tokenizers.Tokenizer.from_file(str(peer))
            return lambda text: hf.encode(text, add_special_tokens=False).ids
        if lib == "fastokens":
            import fastokens

            ft = (fastokens.Tokenizer.from_file(str(peer)) if vocab in HF_FOLDERS
                  else fastokens.Tokenizer.from_tiktoken(str(source), encoding=vocab))
            return lambda text: ft.encode(text, add_special_tokens=False).ids
        if lib == "quicktok":
            import quicktok

            qt = quicktok.get_encoding(vocab)
            return qt.encode
        if lib == "tokie":
            import tokie

            tk = tokie.Tokenizer.from_json(str(peer))
            return lambda text: tk.encode(text, add_special_tokens=False).ids
        if lib == "bpe-openai":
            from bpe_openai import _bindings

            if vocab not in ("cl100k_base", "o200k_base"):
                return None
            return _bindings.tokenizer_for_encoding(vocab).encode
        if lib == "nanotok":
            import nanotok

            return nanotok.Tokenizer.from_file(str(peer)).encode
        raise ValueError(lib)


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    return Encoders(tmp_path_factory.mktemp("onepass"))


_REFERENCE_IDS: dict[tuple[str, str], list[list[int]]] = {}


def reference_ids(encoders: Encoders, vocab: str, lang: str, docs: list[str]) -> list[list[int]]:
    key = (vocab, lang)
    if key not in _REFERENCE_IDS:
        encode = encoders.get(vocab, REFERENCE[vocab]) or encoders.get(vocab, "cybpe")
        _REFERENCE_IDS[key] = [list(encode(d)) for d in docs]
    return _REFERENCE_IDS[key]


@pytest.mark.skipif(not TEXTS, reason="the one-pass table needs $CYBPE_SHARED/corpora/eval")
# Every library's row of one cell runs before the next cell's (lib varies fastest): the ratios
# compare runs seconds apart, not minutes, on a host whose speed drifts.
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("lang", list(TEXTS) or ["none"])
@pytest.mark.parametrize("vocab", VOCABS)
def test_onepass(benchmark, encoders, lib, vocab, lang):
    encode = encoders.get(vocab, lib)
    if encode is None:
        pytest.skip(encoders.reason[(vocab, lib)])
    docs = documents(TEXTS[lang].read_text(encoding="utf-8"))
    rounds = min(ROUNDS, len(docs))
    parts = [list(range(r, len(docs), rounds)) for r in range(rounds)]
    batch = isinstance(encode, tuple)
    got: dict[int, list[int]] = {}
    seconds: list[float] = []
    thread_seconds: list[float] = []  # the calling thread's CPU time in each round
    sizes = [sum(len(docs[i].encode()) for i in part) for part in parts]

    def run(part):
        texts = [docs[i] for i in part]
        start, start_cpu = time.perf_counter(), time.thread_time()
        out = encode[1](texts) if batch else [encode(t) for t in texts]
        seconds.append(time.perf_counter() - start)
        thread_seconds.append(time.thread_time() - start_cpu)
        got.update(zip(part, out))

    todo = iter(parts)
    # The harness's own objects (every library's loaded vocabulary, earlier cells' ids) are
    # moved out of the cyclic collector's sight before each row: a full pass over them took
    # tens of ms in whichever row's round it fell (with the collector off, Llama 3, the last
    # vocabulary, gained 10-30 % on French and Spanish; fastokens' rows did not move). What a
    # row allocates itself is still collected as in a user's process.
    gc.collect()
    gc.freeze()
    benchmark.group = f"one pass {vocab} {lang}"
    benchmark.pedantic(run, setup=lambda: ((next(todo),), {}), rounds=rounds, iterations=1)
    reference = reference_ids(encoders, vocab, lang, docs)
    identical = all(list(got[i]) == reference[i] for i in range(len(docs)))
    per_round = sorted(size / s / 1e6 for size, s in zip(sizes, seconds))
    benchmark.extra_info.update({
        "vocab": vocab, "lang": lang, "lib": lib, "version": _version(lib), "threads": 2 if batch else 1,
        "MB": sum(sizes) / 1e6, "documents": len(docs), "ids_identical": identical,
        "pass_mb_s": sum(sizes) / sum(seconds) / 1e6,
        "best_round_mb_s": per_round[-1], "median_round_mb_s": per_round[len(per_round) // 2],
        # One thread: below 1, something else had the core part of the time (the row is
        # suspect); a batch row's work is on other threads, so it has no such check.
        "thread_over_wall": None if batch else sum(thread_seconds) / sum(seconds),
    })
