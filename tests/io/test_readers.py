"""Streaming readers (cybpe/io/readers.py): compression detected from the bytes, URLs through
fsspec, byte ranges, and typed errors for missing, corrupt and non-UTF-8 input."""

from __future__ import annotations

import bz2
import gzip
import lzma

import fsspec
import pytest
import zstandard

from cybpe.errors import CorpusError
from cybpe.io.readers import (
    detect_compression,
    iter_text,
    open_binary,
    open_text,
    read_bytes,
    read_text,
)

TEXT = "héllo wörld, 你好\r\nsecond line\n\n  indented\tend 🙂" * 3000


def _zstd_two_frames(data: bytes) -> bytes:
    half = len(data) // 2  # like multi-threaded zstd output: one frame after another
    compressor = zstandard.ZstdCompressor()
    return compressor.compress(data[:half]) + compressor.compress(data[half:])


COMPRESSORS = {
    None: lambda b: b,
    "gzip": gzip.compress,
    "xz": lzma.compress,
    "bz2": bz2.compress,
    "zstd": _zstd_two_frames,
}


@pytest.mark.parametrize("kind", list(COMPRESSORS))
def test_every_compression_is_detected_and_streamed(tmp_path, kind):
    raw = TEXT.encode("utf-8")
    # A misleading name: detection reads the bytes, not the suffix.
    path = tmp_path / "corpus.txt"
    path.write_bytes(COMPRESSORS[kind](raw))
    assert detect_compression(path.read_bytes()[:10]) == kind
    assert read_text(path) == TEXT  # \r\n kept as written
    assert read_bytes(path) == raw
    with open_text(str(path)) as f:
        assert f.read() == TEXT
    pieces = list(iter_text(path, read_bytes=1000))
    assert len(pieces) > 1 and "".join(pieces) == TEXT


def test_concatenated_gzip_members_and_bz2_streams(tmp_path):
    for name, comp in (("g", gzip.compress), ("b", bz2.compress), ("x", lzma.compress)):
        path = tmp_path / name
        path.write_bytes(comp(b"first\n") + comp(b"second\n"))
        assert read_text(path) == "first\nsecond\n"


def test_plain_text_that_looks_like_a_magic_number_is_plain(tmp_path):
    path = tmp_path / "bz.txt"
    path.write_text("BZh9 is not bzip2 unless the block magic follows\n")
    assert detect_compression(path.read_bytes()) is None
    assert read_text(path).startswith("BZh9")
    (tmp_path / "short").write_bytes(b"ab")
    assert read_text(tmp_path / "short") == "ab"
    (tmp_path / "empty").write_bytes(b"")
    assert read_text(tmp_path / "empty") == ""


def test_byte_range_of_a_plain_file(tmp_path):
    raw = TEXT.encode("utf-8")
    path = tmp_path / "c.txt"
    path.write_bytes(raw)
    with open_binary(path, start=1000, end=5000) as f:
        assert f.read() == raw[1000:5000]
    with open_binary(path, start=len(raw) - 10) as f:
        assert f.read() == raw[-10:]
    gz = tmp_path / "c.gz"
    gz.write_bytes(gzip.compress(raw))
    with pytest.raises(CorpusError, match="byte range"):
        open_binary(gz, start=10)


def test_urls_go_through_fsspec(tmp_path):
    raw = TEXT.encode("utf-8")
    path = tmp_path / "c.txt.zst"
    path.write_bytes(_zstd_two_frames(raw))
    assert read_text(f"file://{path}") == TEXT
    memory = fsspec.filesystem("memory")
    memory.pipe("/cybpe-test/c.xz", lzma.compress(raw))
    try:
        assert read_text("memory://cybpe-test/c.xz") == TEXT
        with pytest.raises(CorpusError, match="no such file"):
            read_text("memory://cybpe-test/missing.txt")
    finally:
        memory.rm("/cybpe-test", recursive=True)


def test_errors_are_typed_and_say_where(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        read_text(tmp_path / "missing.txt")
    with pytest.raises(CorpusError, match="directory"):
        read_text(tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok ok \xff rest")
    with pytest.raises(CorpusError, match="invalid UTF-8 at byte offset 6"):
        read_text(bad)
    assert read_text(bad, errors="replace") == "ok ok \ufffd rest"
    assert read_text(bad, errors="ignore") == "ok ok  rest"
    bad_xz = tmp_path / "bad.xz"
    bad_xz.write_bytes(lzma.compress(b"abc \xc3"))  # truncated UTF-8 at the very end
    with pytest.raises(CorpusError, match="byte offset 4"):
        read_text(bad_xz)
    for kind in ("gzip", "xz", "bz2", "zstd"):
        truncated = tmp_path / f"truncated.{kind}"
        whole = COMPRESSORS[kind](TEXT.encode("utf-8"))
        truncated.write_bytes(whole[: len(whole) - 20])
        with pytest.raises(CorpusError, match="cannot read"):
            read_text(truncated)
    with pytest.raises(LookupError):
        open_text(bad, errors="no-such-handler")
