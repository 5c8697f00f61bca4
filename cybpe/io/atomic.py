"""File I/O for the format modules: atomic replacement on save, FormatError on a bad read.

Saving: a reader sees either the old file or the complete new one, never a mix.

The data goes to a temporary file in the target's own directory (so ``os.replace`` is a rename
within one file system), is flushed and fsynced, and only then renamed over the target. On any
error the temporary file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from typing import Any, BinaryIO, Iterator, Union

from cybpe.errors import FormatError

PathLike = Union[str, "os.PathLike[str]"]

_umask_lock = threading.Lock()
_umask_cache: list[int] = []


def _umask() -> int:
    """The process umask (read once: reading it means setting it, so it is done under a lock)."""
    if not _umask_cache:
        with _umask_lock:
            if not _umask_cache:
                mask = os.umask(0o022)
                os.umask(mask)
                _umask_cache.append(mask)
    return _umask_cache[0]


def _target_mode(path: str) -> int:
    """Keep an existing file's permission bits; a new file gets the usual ``0o666 & ~umask``."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: PathLike) -> Iterator[BinaryIO]:
    """A binary file to write into; on a clean exit it replaces ``path`` atomically, on an
    error it is removed and ``path`` is left as it was (see the module docstring)."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(
        dir=directory, prefix="." + os.path.basename(target) + ".", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _target_mode(target))
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Replace the file at ``path`` with ``data`` atomically (see the module docstring)."""
    with atomic_writer(path) as handle:
        handle.write(data)


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> None:
    """Replace the file at ``path`` with ``text`` (encoded, newlines written as given)."""
    atomic_write_bytes(path, text.encode(encoding))


def read_file_bytes(path: PathLike) -> bytes:
    """The whole file; a missing or unreadable file is a :class:`FormatError` naming the path."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise FormatError(f"{os.fspath(path)}: cannot read the file: {reason}") from exc


def read_json(path: PathLike) -> Any:
    """Parse a UTF-8 JSON file; invalid JSON is a :class:`FormatError` with line and column."""
    data = read_file_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            f"{os.fspath(path)}: line {line}: not UTF-8 text (byte offset {exc.start})"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{os.fspath(path)}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
