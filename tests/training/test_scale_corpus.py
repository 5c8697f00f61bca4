"""bench/scale_corpus.py (the scale benchmarks' input builder) runs, in its smoke mode, and
builds what it says: the training corpus's documents, resampled deterministically, and
distinct words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cybpe
from support import REPO_DIR

SCRIPT = REPO_DIR / "bench" / "scale_corpus.py"


def _build(folder: Path, shared_dir: Path, *args: str) -> str:
    env = dict(os.environ, BENCH_SCALE_SMOKE="1", CYBPE_SHARED=str(shared_dir))
    out = subprocess.run([sys.executable, str(SCRIPT), str(folder), *args], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_smoke_build_is_deterministic_resampled_documents(tmp_path, shared_dir):
    first = _build(tmp_path / "a", shared_dir, "--mb", "3", "--distinct", "5000")
    _build(tmp_path / "b", shared_dir, "--mb", "3", "--distinct", "5000")
    files = sorted((tmp_path / "a" / "corpus").iterdir())
    data = b"".join(p.read_bytes() for p in files)
    again = b"".join(p.read_bytes() for p in sorted((tmp_path / "b" / "corpus").iterdir()))
    assert data == again and 2_900_000 < len(data) <= 3_000_000 and "5000 distinct words" in first
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import scale_corpus
    finally:
        sys.path.remove(str(SCRIPT.parent))
    documents = scale_corpus.read_documents(scale_corpus.source_path(shared_dir), 8_000_000)
    source_lines = {line for doc in documents for line in doc.split("\n")}
    text = data.decode("utf-8")
    assert set(text.split("\n")) <= source_lines  # the training corpus's text only
    assert not text.startswith(documents[0][:200])  # reordered


def test_smoke_distinct_words_are_distinct_chunks(tmp_path, shared_dir):
    _build(tmp_path, shared_dir, "--mb", "1", "--distinct", "3000")
    counts = cybpe.count(cybpe.files(tmp_path / "distinct.txt"), "cl100k")
    words = [chunk for chunk, n in counts.items() if chunk != b"\n"]
    assert len(words) == 3000 and all(n == 1 for chunk, n in counts.items() if chunk != b"\n")
