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


def cl100k_ranks_path():
    shared = shared_path()
    if shared is None:
        pytest.skip("encoding benchmarks need $CYBPE_SHARED/vocab/cl100k_base.tiktoken")
    return shared / "vocab" / "cl100k_base.tiktoken"
