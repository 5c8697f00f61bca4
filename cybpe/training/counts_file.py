"""The binary chunk-counts file: a small header, then the counter's own arrays.

Layout (all integers little-endian)::

    offset  size  field
    0       8     magic  b"CYBPECNT"
    8       4     format version (uint32), this module writes and reads VERSION
    12      4     compression of the arrays (uint32): 0 none, 1 zstd, 2 gzip
    16      8     n, the number of distinct chunks (uint64)
    24      8     arena bytes, all chunks together (uint64)
    32      8     m, the metadata length (uint64)
    40      m     metadata, UTF-8 JSON: pretokenizer spec, special tokens, total, exactness
    ...           zero padding to a multiple of 8
    then, compressed as one stream when the field says so:
            8(n+1) offsets (int64): chunk e is arena[offsets[e]:offsets[e+1]]
            8n     counts (int64, > 0)
            arena  the chunk bytes, back to back
            16     trailer: b"CYBPEEND", CRC-32 of the three arrays (uint32), 4 zero bytes

The arrays are the compiled counter's memory as it is (entries in first-counted order), so
saving writes it without building anything, and loading reads straight into newly allocated
arrays, then checks them (offsets in order, counts > 0, the total, the CRC). The hash index is
built only when a call needs it (an update, a merge, a lookup); training never does, and refuses
a chunk stored twice when it sorts. Peak memory on load is the data itself.

The save and load times of 10 M chunks: docs/performance.md, "Counting at scale"
(``bench/test_bench_scale.py``).

Thread safety: save and load share no state; saving a ChunkCounts another thread is filling
raises (the counter is busy) rather than writing a torn copy.
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import sys
import zlib
from typing import Any, BinaryIO, Optional

from cybpe.errors import FormatError

MAGIC = b"CYBPECNT"
TRAILER = b"CYBPEEND"
VERSION = 1
_HEADER = struct.Struct("<8sIIQQQ")
_TRAILER = struct.Struct("<8sII")
COMPRESSIONS = {None: 0, "zstd": 1, "gzip": 2}
_WRITE_PIECE = 1 << 24  # bytes per write call into a compressor


def is_binary_counts(head: bytes) -> bool:
    return head.startswith(MAGIC)


class _Checksummed:
    """A writer (or reader) that keeps the CRC-32 of what passes through."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.crc, self.nbytes = stream, 0, 0

    def write(self, buffer: Any) -> None:
        view = memoryview(buffer).cast("B")
        if not len(view):
            return  # (zlib's crc32 of an empty buffer at address NULL restarts at 0)
        self.crc = zlib.crc32(view, self.crc)
        for start in range(0, len(view), _WRITE_PIECE):
            self.stream.write(view[start:start + _WRITE_PIECE])
        self.nbytes += len(view)

    def readinto(self, buffer: Any) -> None:
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view):
            got = self.stream.readinto(view[filled:])
            if not got:
                raise FormatError("the chunk-counts file ends early (truncated?)")
            filled += got
        if filled:
            self.crc = zlib.crc32(view, self.crc)
        self.nbytes += filled


def _compressor(kind: Optional[str], out: BinaryIO) -> Any:
    if kind is None:
        return out
    if kind == "gzip":
        return gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1, mtime=0)
    try:
        import zstandard
    except ImportError:
        raise FormatError("compress='zstd' needs the zstandard package (pip install 'cybpe[zstd]')") from None
    return zstandard.ZstdCompressor(level=3, threads=-1).stream_writer(out, closefd=False)


def write_counts(out: BinaryIO, table: Any, meta: dict, compress: Optional[str] = None) -> None:
    """Write ``table`` (a ChunkCounter) and ``meta`` (JSON-able) to the binary stream ``out``."""
    if compress not in COMPRESSIONS:
        raise FormatError(f"unknown compression {compress!r}; use None, 'zstd' or 'gzip'")
    meta_bytes = json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    header = _HEADER.pack(MAGIC, VERSION, COMPRESSIONS[compress], len(table), table.arena_bytes,
                          len(meta_bytes)) + meta_bytes
    out.write(header + b"\0" * (-len(header) % 8))
    sink = _compressor(compress, out)
    body = _Checksummed(sink)
    arrays_written = []

    def write(buffer: Any) -> None:
        if sys.byteorder != "little" and len(arrays_written) < 2:  # offsets, counts: int64
            import numpy as np

            buffer = np.frombuffer(buffer, dtype=np.int64).byteswap()
        arrays_written.append(len(buffer))
        body.write(buffer)

    table.write_arrays(write)
    sink.write(_TRAILER.pack(TRAILER, body.crc, 0))
    if sink is not out:
        sink.close()  # flushes the compressed stream (out stays open)


def _decompressor(kind: int, stream: BinaryIO) -> Any:
    if kind == 0:
        return stream
    if kind == 2:
        return gzip.GzipFile(fileobj=stream, mode="rb")
    try:
        import zstandard
    except ImportError:
        raise FormatError("this chunk-counts file is zstd-compressed: pip install 'cybpe[zstd]'") from None
    return zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True, closefd=False)


_KIND_NAMES = {0: "uncompressed", 1: "zstd", 2: "gzip"}


def _stream_errors() -> tuple:
    """What reading a damaged stream of each kind raises."""
    found: list = [OSError, EOFError, zlib.error]
    try:
        import zstandard
        found.append(zstandard.ZstdError)
    except ImportError:
        pass
    return tuple(found)


def _where(source: "_Checksummed", kind: int, body_start: int) -> str:
    """Where in the file a read of the arrays stopped, as precisely as the stream tells."""
    if kind == 0:
        return f"at byte offset {body_start + source.nbytes}"
    return f"after {source.nbytes} bytes of decompressed arrays, which start at byte offset {body_start}"


def read_counts(stream: BinaryIO, label: str) -> tuple[Any, dict]:
    """``(ChunkCounter, metadata)`` from a binary chunk-counts stream; FormatError when corrupt."""
    from cybpe.training.chunk_counter import read_arrays

    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size or not head.startswith(MAGIC):
        raise FormatError(f"{label}: not a binary chunk-counts file")
    _, version, kind, n, arena_bytes, meta_len = _HEADER.unpack(head)
    if version != VERSION:
        raise FormatError(f"{label}: binary chunk-counts version {version}; this cybpe reads version {VERSION}")
    if kind not in COMPRESSIONS.values() or meta_len > 1 << 30 or n >= 1 << 40 or arena_bytes >= 1 << 46:
        raise FormatError(f"{label}: corrupt chunk-counts header")
    meta_raw = stream.read(meta_len)
    if len(meta_raw) < meta_len:
        raise FormatError(f"{label}: the chunk-counts file ends early (truncated?)")
    stream.read(-(_HEADER.size + meta_len) % 8)
    try:
        meta = json.loads(meta_raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{label}: corrupt chunk-counts metadata ({exc})") from None
    if not isinstance(meta, dict):
        raise FormatError(f"{label}: corrupt chunk-counts metadata")
    body_start = _HEADER.size + meta_len + (-(_HEADER.size + meta_len) % 8)
    damaged = _stream_errors()
    source = _Checksummed(_decompressor(kind, stream))
    try:
        table = read_arrays(n, arena_bytes, source.readinto, swap=sys.byteorder != "little")
        crc = source.crc
        trailer = source.stream.read(_TRAILER.size)
    except FormatError as exc:
        raise FormatError(f"{label}: {exc} ({_where(source, kind, body_start)})") from None
    except damaged as exc:
        # zlib.error, zstandard.ZstdError, EOFError, gzip's BadGzipFile: a damaged stream.
        raise FormatError(f"{label}: the {_KIND_NAMES[kind]} data is damaged ({_where(source, kind, body_start)}: "
                          f"{str(exc) or type(exc).__name__})") from None
    except ValueError as exc:
        raise FormatError(f"{label}: {exc}") from None
    except MemoryError:
        raise FormatError(f"{label}: {n} chunks of {arena_bytes} bytes do not fit in memory") from None
    if len(trailer) != _TRAILER.size:
        raise FormatError(f"{label}: the chunk-counts file ends early (truncated?)")
    magic, stored_crc, _ = _TRAILER.unpack(trailer)
    if magic != TRAILER or stored_crc != crc:
        raise FormatError(f"{label}: the chunk-counts data does not match its checksum (corrupt file)")
    if meta.get("total") not in (None, table.total):
        raise FormatError(f"{label}: the counts add up to {table.total}, the header says {meta.get('total')}")
    return table, meta


def file_head(path: "os.PathLike[str] | str") -> bytes:
    from cybpe.io.atomic import regular_file

    regular_file(path)
    with open(path, "rb") as f:
        return f.read(len(MAGIC))
