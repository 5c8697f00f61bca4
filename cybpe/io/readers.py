"""Streaming readers: local files, compressed files and URLs as one byte or text stream.

Every reader of a corpus (training, counting, the command line) opens its input here, so they
all accept the same things:

* a local path (``str`` or ``os.PathLike``);
* a URL (``s3://…``, ``https://…``, ``gs://…``, any scheme fsspec knows) when the optional
  ``fsspec`` package is installed (``pip install 'cybpe[remote]'``, plus the scheme's own backend,
  e.g. s3fs);
* gzip, xz, bzip2 and zstd compression, detected from the file's first bytes (not its name).
  zstd comes from the standard library (``compression.zstd``, Python ≥ 3.14), ``backports.zstd``
  or ``zstandard`` (``pip install 'cybpe[zstd]'``), whichever is importable first.

Nothing is read whole: the streams decompress as they are read. A byte range (``start``/``end``)
of an uncompressed input reads only that part (what :func:`cybpe.shards` hands to workers).

Thread safety: the functions share no state; each returned stream belongs to one thread.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import re
import stat
import sys
import zlib
from typing import Any, BinaryIO, Iterator, Optional, TextIO, Union

from cybpe.errors import CorpusError

Source = Union[str, "os.PathLike[str]"]

READ_BYTES = 1 << 20

# Leading bytes of each compressed format. gzip, xz and zstd magics are not valid UTF-8, so no
# text file is mistaken for them; bzip2's "BZh" is ASCII, so its check also reads the block size
# digit and the first block's (or the empty stream's) 6-byte magic.
MAGIC: dict[bytes, str] = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}
_BZ2 = re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)")
COMPRESSIONS = ("gzip", "xz", "bz2", "zstd")
_HEAD = 10


def is_url(source: Any) -> bool:
    """Whether ``source`` is a URL for fsspec (``file://`` URLs count: fsspec opens them too)."""
    return isinstance(source, str) and "://" in source


def detect_compression(head: bytes) -> Optional[str]:
    """``"gzip"``, ``"xz"``, ``"bz2"``, ``"zstd"`` or None (plain) from a file's first bytes."""
    for magic, name in MAGIC.items():
        if head.startswith(magic):
            return name
    return "bz2" if _BZ2.match(head) else None


def _decompress_errors() -> tuple:
    """What a corrupt or truncated compressed stream raises, for each decompressor."""
    found: list = [OSError, EOFError, lzma.LZMAError, zlib.error]
    try:
        import zstandard
        found.append(zstandard.ZstdError)
    except ImportError:
        pass
    return tuple(found)


def damaged(source: Source, exc: BaseException, offset: Optional[int] = None) -> CorpusError:
    """The CorpusError for a read that failed inside a (compressed) stream: names the source,
    the decompressed byte offset reached when known, and the decompressor's reason."""
    where = "" if offset is None else f" after {offset} bytes of decompressed data"
    reason = str(exc) or type(exc).__name__
    return CorpusError(f"{_label(source)}: cannot read: damaged or truncated data{where} ({reason})")


def require_fsspec() -> Any:
    """The fsspec module, or a CorpusError saying how to install it."""
    try:
        import fsspec
    except ImportError:
        raise CorpusError(
            "reading URLs needs the optional fsspec package: pip install 'cybpe[remote]' "
            "(and the scheme's backend, e.g. s3fs for s3://)"
        ) from None
    return fsspec


def open_raw(source: Source) -> BinaryIO:
    """The input's bytes as stored (no decompression). A missing file is a CorpusError.
    ``"-"`` is stdin (left open when the stream is closed)."""
    if isinstance(source, (str, os.PathLike)) and os.fspath(source) == "-":
        return open(sys.stdin.buffer.fileno(), "rb", closefd=False)
    if is_url(source):
        fsspec = require_fsspec()
        try:
            return fsspec.open(source, "rb").open()
        except FileNotFoundError:
            raise CorpusError(f"{source}: cannot open: no such file") from None
        except ImportError as exc:  # fsspec names the backend package the scheme needs
            raise CorpusError(f"{source}: {exc}") from None
        except (OSError, ValueError) as exc:
            raise CorpusError(f"{source}: cannot open ({exc})") from None
    try:
        mode = os.stat(os.fspath(source)).st_mode
    except (OSError, ValueError, TypeError):
        mode = None  # open() below says why
    if mode is not None and not stat.S_ISREG(mode):
        # Opening a FIFO blocks until a writer comes, and a device such as /dev/zero never
        # ends: both are refused before they are opened. Streams come in as "-" (stdin).
        from cybpe.io.atomic import file_kind

        raise CorpusError(f"{os.fspath(source)}: cannot read it: it is {file_kind(mode)}, not a "
                          f"regular file (pipe a stream into stdin as '-')")
    try:
        return open(os.fspath(source), "rb")
    except FileNotFoundError:
        raise CorpusError(f"{os.fspath(source)}: cannot open: no such file") from None
    except IsADirectoryError:
        raise CorpusError(f"{os.fspath(source)}: cannot open: a directory, not a file") from None
    except OSError as exc:
        raise CorpusError(f"{os.fspath(source)}: cannot open ({exc.strerror or exc})") from None
    except TypeError:
        raise CorpusError(f"not a path or URL: {source!r}") from None


class _Wrapped(io.RawIOBase):
    """A readable stream over ``inner`` that closes every object of ``owned`` when closed.

    With ``prefix`` it first returns those bytes (the head read to detect the compression of a
    stream that cannot seek back); with ``limit`` it ends after that many bytes (byte ranges).
    """

    def __init__(self, inner: Any, owned: tuple, prefix: bytes = b"", limit: Optional[int] = None):
        super().__init__()
        self._inner, self._owned, self._prefix, self._left = inner, owned, prefix, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = len(view) if self._left is None else min(len(view), self._left)
        if want == 0:
            return 0
        if self._prefix:
            n = min(want, len(self._prefix))
            view[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
        else:
            data = self._inner.read(want)
            n = len(data)
            view[:n] = data
        if self._left is not None:
            self._left -= n
        return n

    def close(self) -> None:
        if not self.closed:
            for obj in self._owned:
                obj.close()
        super().close()


def _zstd_reader(raw: BinaryIO) -> Any:
    try:  # Python 3.14+, or its backport
        from compression import zstd  # type: ignore[import-not-found]
        return zstd.ZstdFile(raw)
    except ImportError:
        pass
    try:
        from backports import zstd  # type: ignore[import-not-found,no-redef]
        return zstd.ZstdFile(raw)
    except ImportError:
        pass
    try:
        import zstandard  # noqa: F401
    except ImportError:
        raise CorpusError(
            "this input is zstd-compressed: install the optional zstandard package "
            "(pip install 'cybpe[zstd]'), or use Python 3.14+"
        ) from None
    return _ZstandardReader(raw)


class _ZstandardReader(io.RawIOBase):
    """zstd frames one after another (multi-threaded zstd writes several), decoded with
    ``zstandard``'s decompressobj. Its stream_reader ends quietly on a truncated frame; this
    checks that the last frame is complete (EOFError otherwise, as gzip and lzma do)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        import zstandard

        self._zstd, self._raw = zstandard, raw
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._started = False  # the current frame has been fed some bytes
        self._out = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._out:
            data = self._raw.read(READ_BYTES)
            if not data:
                if self._started:
                    raise EOFError("the zstd stream ends inside a frame (truncated file?)")
                return 0
            while data:
                self._started = True
                self._out += self._frame.decompress(data)
                if not self._frame.eof:
                    break
                data = self._frame.unused_data
                self._frame = self._zstd.ZstdDecompressor().decompressobj()
                self._started = False
        n = min(len(view), len(self._out))
        view[:n] = self._out[:n]
        self._out = self._out[n:]
        return n


def _decompressor(kind: str, raw: BinaryIO) -> Any:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "xz":
        return lzma.LZMAFile(raw)
    if kind == "bz2":
        return bz2.BZ2File(raw)
    return _zstd_reader(raw)


def _peek_head(raw: BinaryIO) -> tuple[bytes, bool]:
    """The first bytes of ``raw`` and whether the stream is back at its start."""
    if hasattr(raw, "peek"):
        head = raw.peek(_HEAD)[:_HEAD]
        if len(head) >= _HEAD or not head:
            return head, True
    head = raw.read(_HEAD)
    try:
        if raw.seekable():
            raw.seek(0)
            return head, True
    except (OSError, ValueError):
        pass
    return head, False


def open_binary(
    source: Source, *, compression: str = "infer", start: int = 0, end: Optional[int] = None
) -> BinaryIO:
    """The input's (decompressed) bytes as a stream.

    ``compression``: ``"infer"`` (from the first bytes), None (read as stored) or one of
    ``COMPRESSIONS``. ``start``/``end`` read a byte range of an uncompressed input.
    """
    if compression not in ("infer", None) and compression not in COMPRESSIONS:
        raise CorpusError(f"unknown compression {compression!r}; use 'infer', None or one of {COMPRESSIONS}")
    raw = open_raw(source)
    try:
        kind: Optional[str]
        head, rewound = _peek_head(raw) if compression == "infer" else (b"", True)
        kind = detect_compression(head) if compression == "infer" else compression
        stream: Any = raw if rewound else _Wrapped(raw, (), prefix=head)
        if kind is not None:
            if start or end is not None:
                raise CorpusError(f"{source}: a byte range of a {kind}-compressed input cannot be read")
            inner = _decompressor(kind, stream)
            return io.BufferedReader(_Wrapped(inner, (inner, raw)), READ_BYTES)  # type: ignore[return-value]
        if not (start or end is not None):
            return stream if stream is raw else io.BufferedReader(stream, READ_BYTES)  # type: ignore[return-value]
        if start < 0 or (end is not None and end < start):
            raise CorpusError(f"{source}: bad byte range {start}..{end}")
        if start:
            if not rewound:
                raise CorpusError(f"{source}: this stream cannot seek to byte {start}")
            raw.seek(start)
        limit = None if end is None else end - start
        return io.BufferedReader(_Wrapped(raw, (raw,), limit=limit), READ_BYTES)  # type: ignore[return-value]
    except BaseException:
        raw.close()
        raise


def open_text(
    source: Source,
    errors: str = "strict",
    *,
    encoding: str = "utf-8",
    compression: str = "infer",
    newline: Optional[str] = "",
) -> TextIO:
    """The input as text (UTF-8 by default), decompressed as it is read.

    ``errors`` as for ``bytes.decode``. ``newline=""`` (the default) keeps ``\\r\\n`` as it is:
    corpora are counted as written, not with translated line ends.
    """
    codecs.lookup_error(errors)  # LookupError now rather than at the first bad byte
    return io.TextIOWrapper(open_binary(source, compression=compression), encoding=encoding,
                            errors=errors, newline=newline)


def _label(source: Source) -> str:
    return source if isinstance(source, str) else os.fspath(source)


def iter_text(
    source: Source,
    errors: str = "strict",
    *,
    start: int = 0,
    end: Optional[int] = None,
    read_bytes: int = READ_BYTES,
) -> Iterator[str]:
    """Decoded UTF-8 pieces of about ``read_bytes`` bytes. With ``errors="strict"``, invalid
    UTF-8 is a CorpusError giving the (decompressed) byte offset."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    offset = start
    with open_binary(source, start=start, end=end) as f:
        while True:
            try:
                raw = f.read(read_bytes)
            except _decompress_errors() as exc:
                raise damaged(source, exc, offset) from None
            except MemoryError:
                raise CorpusError(f"{_label(source)}: out of memory while decompressing it "
                                  f"(after {offset} bytes of text; a compression bomb?)") from None
            pending = len(decoder.getstate()[0])  # bytes of a character cut by the last read
            try:
                text = decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as exc:
                raise CorpusError(
                    f"{_label(source)}: invalid UTF-8 at byte offset {offset - pending + exc.start} "
                    f"(pass errors='replace' or 'ignore' to accept it)"
                ) from None
            offset += len(raw)
            if text:
                yield text
            if not raw:
                return


def read_text(source: Source, errors: str = "strict") -> str:
    """The whole input as one string (decompressed); see :func:`iter_text` for errors."""
    return "".join(iter_text(source, errors))


def read_bytes(source: Source) -> bytes:
    """The whole input's bytes (decompressed)."""
    with open_binary(source) as f:
        try:
            return f.read()
        except _decompress_errors() as exc:
            raise damaged(source, exc) from None
        except MemoryError:
            raise CorpusError(f"{_label(source)}: out of memory while reading it "
                              f"(a compression bomb?)") from None


