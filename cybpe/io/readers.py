"""Streaming readers: plain, gzip, xz, bzip2 and zstd files (told apart by their first bytes,
not their names) and stdin (``"-"``), as binary or text streams that never hold the whole input.

zstd needs Python 3.14's ``compression.zstd`` or the ``zstandard`` package (the error says so).
"""

from __future__ import annotations

import io
import os
import sys
from typing import BinaryIO, TextIO, Union

from cybpe.errors import CorpusError

PathLike = Union[str, "os.PathLike[str]"]

MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bz2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


def compression_of(head: bytes) -> str:
    """"gzip", "xz", "bz2", "zstd" or "" (uncompressed) from a stream's first bytes."""
    for magic, name in MAGIC:
        if head.startswith(magic):
            return name
    return ""


def _zstd_reader(raw: BinaryIO, label: str) -> BinaryIO:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14

        return zstd.ZstdFile(raw)  # type: ignore[no-any-return]
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise CorpusError(f"{label}: a zstd file; reading it needs Python 3.14 or the 'zstandard' "
                          f"package (pip install zstandard)") from None
    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True))


def open_binary(path: PathLike) -> BinaryIO:
    """The decompressed bytes of ``path`` (``"-"``: stdin) as a readable binary stream."""
    label = os.fspath(path)
    if label == "-":
        raw: BinaryIO = sys.stdin.buffer
    else:
        try:
            raw = open(path, "rb")
        except OSError as exc:
            raise CorpusError(f"{label}: cannot open ({exc.strerror or exc})") from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    kind = compression_of(buffered.peek(8)[:8])
    if kind == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=buffered)  # type: ignore[return-value]
    if kind == "xz":
        import lzma

        return lzma.LZMAFile(buffered)  # type: ignore[return-value]
    if kind == "bz2":
        import bz2

        return bz2.BZ2File(buffered)  # type: ignore[return-value]
    if kind == "zstd":
        return _zstd_reader(buffered, label)
    return buffered


def open_text(path: PathLike, errors: str = "strict") -> TextIO:
    """The text of ``path`` (UTF-8, decoded with ``errors``), decompressed as needed, streamed."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors=errors, newline="")
