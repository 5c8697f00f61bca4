"""Benchmarks (pytest-benchmark), side by side with the peers in one run.

Run: ``python -m pytest bench/ --benchmark-columns=min,median,ops --benchmark-group-by=group``
Inputs come from ``$CYBPE_SHARED`` (default ``../shared``); without it the bundled samples are used.
"""

from __future__ import annotations

import lzma
import os
from pathlib import Path

import pytest



REPO = Path(__file__).resolve().parents[1]


def shared_path():
    configured = os.environ.get("CYBPE_SHARED")
    path = Path(configured) if configured else REPO.parent / "shared"
    return path if path.is_dir() else None


def text_samples() -> dict[str, str]:
    """English, code, CJK and an abugida script, a few MB each when ../shared is present."""
    shared = shared_path()
    data, udhr = REPO / "tests" / "data", REPO / "cybpe" / "data" / "udhr"
    if shared is None:
        return {"english": (udhr / "en.txt").read_text() * 20,
                "code": (data / "python_sample.txt").read_text(),
                "hindi": (udhr / "hi.txt").read_text() * 10}
    ev = shared / "corpora" / "eval"
    return {
        "english": (ev / "docs" / "en.txt").read_text(),
        "code": (ev / "code" / "python.txt").read_text() + (ev / "code" / "c.txt").read_text(),
        "chinese": (ev / "docs" / "zh-Hans.txt").read_text(),
        "hindi": (ev / "parallel-ntrex" / "hi.txt").read_text(),
    }


def training_text(megabytes: int) -> str:
    shared = shared_path()
    if shared is None:
        pytest.skip("training benchmarks need $CYBPE_SHARED/corpora/train/mixed-train.txt.xz")
    with lzma.open(shared / "corpora" / "train" / "mixed-train.txt.xz", "rt", encoding="utf-8") as f:
        text = f.read(megabytes * 1_000_000)
    return text[: text.rfind("\n\n") + 2]


def training_text_of(languages: tuple[str, ...], megabytes: int) -> str:
    """The training corpus's documents in ``languages`` (tags of documents.tsv.xz: "en",
    "code-python", ...), in corpus order, joined, cut after about ``megabytes`` MB: text that
    none of the eval files (and so no other benchmark here) contains."""
    shared = shared_path()
    if shared is None:
        pytest.skip("these benchmarks need $CYBPE_SHARED/corpora/train/")
    train = shared / "corpora" / "train"
    with lzma.open(train / "documents.tsv.xz", "rt", encoding="utf-8") as f:
        rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    with lzma.open(train / "mixed-train.txt.xz", "rb") as f:
        corpus = f.read()
    parts, size = [], 0
    for offset, length, lang, *_ in rows:
        if lang in languages:
            parts.append(corpus[int(offset):int(offset) + int(length)])
            size += int(length)
            if size >= megabytes * 1_000_000:
                break
    return b"".join(parts).decode("utf-8")


def cl100k_ranks_path():
    shared = shared_path()
    if shared is None:
        pytest.skip("encoding benchmarks need $CYBPE_SHARED/vocab/cl100k_base.tiktoken")
    return shared / "vocab" / "cl100k_base.tiktoken"


#: cl100k's pattern as HF conversions and peers' own files write it (classic, non-possessive);
#: cybpe's built-in cl100k pattern is the possessive form, which splits identically.
CLASSIC_CL100K = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
                  r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")


def merges_from_ranks(tokens: list[bytes]) -> list[tuple[int, int]]:
    """The merge list HF conversions build from tiktoken ranks: each multi-byte token's last
    merge when BPE runs on its bytes with lower ranks only (rank = id for these vocabularies)."""
    rank = {tok: i for i, tok in enumerate(tokens)}
    merges = []
    for r, tok in enumerate(tokens):
        if len(tok) < 2:
            continue
        parts = [tok[i:i + 1] for i in range(len(tok))]
        while len(parts) > 2:
            best, at = None, -1
            for i in range(len(parts) - 1):
                got = rank.get(parts[i] + parts[i + 1])
                if got is not None and got < r and (best is None or got < best):
                    best, at = got, i
            if best is None:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        if len(parts) == 2:
            merges.append((rank[parts[0]], rank[parts[1]]))
    return merges


def peer_tokenizer_json(tokens: list[bytes], path: Path) -> Path:
    """A tokenizer.json built the way peers are usually given one: the classic cl100k string
    and the merges reconstructed from the ranks, with ``ignore_merges`` (peers-perf notes)."""
    import json

    from cybpe.formats.bytelevel import bytes_to_bytelevel

    vocab = {bytes_to_bytelevel(t): i for i, t in enumerate(tokens)}
    merges = [f"{bytes_to_bytelevel(tokens[a])} {bytes_to_bytelevel(tokens[b])}" for a, b in merges_from_ranks(tokens)]
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": CLASSIC_CL100K}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": True, "vocab": vocab, "merges": merges},
    }
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path
