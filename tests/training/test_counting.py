"""Public counting: cybpe.count over texts, files, globs, directories and compressed files;
ChunkCounts.update with paths; one count trains several vocabulary sizes."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest
import zstandard

import cybpe
import cybpe.io.readers
from cybpe.errors import CorpusError, InvalidParameterError

DOCS = [f"Document {i}: the quick brown fox {i * 7} jumps. Ünïcödé {i % 5}\n\n" for i in range(400)]
TEXT = "".join(DOCS)


@pytest.fixture
def tree(tmp_path) -> Path:
    """The same text split over plain and compressed files in nested folders."""
    quarter = len(DOCS) // 4
    parts = ["".join(DOCS[k * quarter:(k + 1) * quarter]).encode() for k in range(4)]
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "a.txt").write_bytes(parts[0])
    (tmp_path / "sub" / "b.txt.gz").write_bytes(gzip.compress(parts[1]))
    (tmp_path / "sub" / "deeper" / "c.xz").write_bytes(lzma.compress(parts[2]))
    (tmp_path / "sub" / "d.zst").write_bytes(zstandard.ZstdCompressor().compress(parts[3]))
    (tmp_path / ".hidden").write_bytes(b"never counted")
    return tmp_path


def expected(pretokenizer="cl100k") -> cybpe.ChunkCounts:
    return cybpe.ChunkCounts(pretokenizer).update([TEXT])


def test_count_texts_files_globs_and_directories(tree):
    want = expected()
    assert cybpe.count(DOCS) == want
    assert cybpe.count(TEXT) == want  # one text
    assert cybpe.count(tree) == want  # a directory: every file under it, hidden ones skipped
    files = cybpe.files(tree)
    assert [p.name for p in files] == ["a.txt", "b.txt.gz", "d.zst", "c.xz"]
    assert cybpe.count(files) == want
    assert cybpe.count(cybpe.files(tree / "**" / "*")) == want  # a glob
    assert cybpe.count(files, workers=2) == want
    # Each file is its own text: for gpt2, "\n\n" + "Document" across files differs from within one.
    parts = [f.read_text() if f.suffix == ".txt" else None for f in files]
    assert cybpe.count(files, "gpt2") == sum((cybpe.count(cybpe.io.readers.read_text(f), "gpt2") for f in files),
                                             cybpe.ChunkCounts("gpt2"))
    assert parts[0] is not None
    assert cybpe.count([*files[:2], *DOCS[200:]]) == want  # paths and texts mixed


def test_update_accepts_paths(tree):
    counts = cybpe.ChunkCounts()
    counts.update(cybpe.files(tree)[:2])
    counts.update(cybpe.files(tree)[2])
    counts.update(cybpe.files(tree)[3:])
    assert counts == expected()


def test_train_reads_compressed_files_and_returns_its_counts(tree):
    with pytest.warns(DeprecationWarning):  # return_counts keeps working, deprecated for cybpe.count
        tok, counts = cybpe.train(cybpe.files(tree), 300, return_counts=True)
    assert counts == expected()
    again = cybpe.train(counts, 300)
    assert again.vocab.merges == tok.vocab.merges
    bigger = cybpe.train(counts, 320)  # one count, several vocabulary sizes
    assert bigger.vocab.merges[: len(tok.vocab.merges)] == tok.vocab.merges
    bz = tree / "e.bz2"
    bz.write_bytes(bz2.compress(TEXT.encode()))
    assert cybpe.train([bz], 300).vocab.merges == tok.vocab.merges


def test_count_errors(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        cybpe.count(tmp_path / "missing.txt")
    with pytest.raises(CorpusError, match="no file matches"):
        cybpe.count(cybpe.files(tmp_path / "*.nothing"))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine \xff\xfe")
    with pytest.raises(CorpusError, match="byte offset 5"):
        cybpe.count(bad)
    assert cybpe.count(bad, errors="replace") == cybpe.count(["fine \ufffd\ufffd"])
    with pytest.raises(CorpusError):
        cybpe.count([b"bytes are not text"])
    with pytest.raises(InvalidParameterError):
        cybpe.count(["x"], workers=0)
