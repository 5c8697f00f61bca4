"""File I/O for the format modules: atomic replacement on save, FormatError on a bad read.

Saving: a reader sees either the old file or the complete new one, never a mix.

The data goes to a temporary file in the target's own directory (so ``os.replace`` is a rename
within one file system), is flushed and fsynced, and only then renamed over the target. On any
error the temporary file is removed and the target is left as it was.

* A destination that is a symbolic link is written *through*: the link stays, and the file it
  points to is replaced (atomically, by a temporary file in that file's folder).
* A destination that exists and is not a regular file (a directory, a device node, a FIFO) is
  refused with :class:`~cybpe.errors.SaveError`; so is any failure to write, and the message
  names the destination, not the temporary file.
* Temporary files are named ``.<name>.<pid>.<random>.cybpe-tmp``. A save that was killed
  leaves one behind; the next save to the same destination removes those whose process is gone
  (and that have not been touched for a minute, in case the folder is shared between machines).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import stat
import threading
import time
from typing import Any, BinaryIO, Iterator, Union

from cybpe.errors import FormatError, InvalidParameterError, ParameterTypeError, SaveError

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


def checked_path(path: Any, argument: str = "path") -> str:
    """``path`` (str, bytes or os.PathLike) as a str file name; a wrong type is a
    :class:`ParameterTypeError`, an empty name or one the file system cannot encode (a NUL, a
    lone surrogate) an :class:`InvalidParameterError`, each naming ``argument``."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ParameterTypeError(f"{argument} must be a str or os.PathLike, not {type(path).__name__}")
    try:
        text = os.fspath(path)
    except TypeError as exc:  # a PathLike whose __fspath__ returns something else
        raise ParameterTypeError(f"{argument}: {exc}") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text:
        raise InvalidParameterError(f"{argument} is an empty file name")
    try:
        if "\0" in text:
            raise ValueError("embedded NUL")
        os.fsencode(text)
    except (ValueError, UnicodeError):
        raise InvalidParameterError(f"{argument} {text!r} is not a valid file name") from None
    return text


TEMP_SUFFIX = ".cybpe-tmp"
#: A temporary file untouched for this long, whose process is gone, is a killed save's.
STALE_SECONDS = 60.0


def _destination(path: PathLike) -> str:
    """The file to replace: ``path``, or the file a symbolic link at ``path`` resolves to.
    SaveError when it exists and is not a regular file."""
    shown = checked_path(path)
    target = os.path.realpath(shown) if os.path.islink(shown) else shown
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise SaveError(f"{shown}: cannot save there: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise SaveError(f"{shown}: cannot save there: it is {file_kind(mode)}, not a regular file")
    return target


def destination(path: PathLike) -> str:
    """The file a save to ``path`` replaces (a symbolic link's target, else ``path``), after
    checking it: :class:`SaveError` naming ``path`` when it exists and is not a regular file.
    For writers that stage several files before renaming them (transformers folders)."""
    return _destination(path)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists (another user's), or cannot tell
        return True
    return True


def remove_stale_temporaries(target: str) -> None:
    """Remove the temporary files that killed saves to ``target`` left (best effort)."""
    directory, name = os.path.split(os.path.abspath(target))
    now = time.time()
    for candidate in glob.glob(os.path.join(glob.escape(directory), glob.escape("." + name) + ".*" + TEMP_SUFFIX)):
        middle = os.path.basename(candidate)[len(name) + 2: -len(TEMP_SUFFIX)]
        pid_text, _, token = middle.partition(".")
        if not pid_text.isdigit() or not token:
            continue
        try:
            if now - os.lstat(candidate).st_mtime < STALE_SECONDS or _process_alive(int(pid_text)):
                continue
            os.unlink(candidate)
        except OSError:
            continue


def _open_temporary(target: str) -> tuple[int, str]:
    directory, name = os.path.split(os.path.abspath(target))
    while True:
        tmp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), tmp
        except FileExistsError:
            continue


class AtomicFile:
    """A file being written for an atomic replace of ``path``: write (and seek) in ``file``,
    then :meth:`commit` (fsync, rename over the destination) or :meth:`abort` (remove it).

    The destination's rules (module docstring) are checked when the object is made: a
    non-regular destination is a :class:`SaveError` before anything is written. Writers that
    stream (``encode_files``) hold one of these; the others use :func:`atomic_writer`."""

    def __init__(self, path: PathLike) -> None:
        self.shown = checked_path(path)
        self.target = _destination(self.shown)
        remove_stale_temporaries(self.target)
        try:
            fd, self.tmp = _open_temporary(self.target)
        except OSError as exc:
            raise self._error(exc) from exc
        self.file: BinaryIO = os.fdopen(fd, "wb")
        self._done = False

    def _error(self, exc: OSError) -> SaveError:
        reason = exc.strerror or str(exc) or type(exc).__name__
        return SaveError(f"{self.shown}: cannot save: {reason}")

    def write(self, data: Any) -> None:
        try:
            self.file.write(data)
        except OSError as exc:
            self.abort()
            raise self._error(exc) from exc

    def commit(self) -> None:
        """Flush, fsync and rename over the destination (SaveError naming it on failure)."""
        if self._done:
            raise SaveError(f"{self.shown}: this save is already finished")
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            os.chmod(self.tmp, _target_mode(self.target))
            # Checked again: a FIFO or folder put at the destination meanwhile is not replaced.
            _destination(self.shown)
            os.replace(self.tmp, self.target)
        except BaseException as exc:
            self.abort()
            if isinstance(exc, OSError) and not isinstance(exc, SaveError):
                raise self._error(exc) from exc
            raise
        self._done = True
        _fsync_directory(os.path.dirname(os.path.abspath(self.target)))

    def abort(self) -> None:
        """Remove the temporary file; the destination stays as it was."""
        if self._done:
            return
        self._done = True
        try:
            self.file.close()
        except Exception:  # noqa: BLE001 - a failed close of a file being thrown away
            pass
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


@contextlib.contextmanager
def atomic_writer(path: PathLike) -> Iterator[BinaryIO]:
    """A binary file to write into; on a clean exit it replaces ``path`` atomically, on an
    error it is removed and ``path`` is left as it was (see the module docstring)."""
    out = AtomicFile(path)
    try:
        yield out.file
    except BaseException as exc:
        out.abort()
        if isinstance(exc, OSError) and not isinstance(exc, SaveError):
            raise out._error(exc) from exc
        raise
    out.commit()


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Replace the file at ``path`` with ``data`` atomically (see the module docstring)."""
    with atomic_writer(path) as handle:
        handle.write(data)


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> None:
    """Replace the file at ``path`` with ``text`` (encoded, newlines written as given)."""
    atomic_write_bytes(path, text.encode(encoding))


def file_kind(mode: int) -> str:
    """What a non-regular file is, for an error message."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def regular_file(path: PathLike, error: type = FormatError) -> str:
    """``path`` when it is a regular file (after links); else ``error`` naming it. Checked
    before opening, since opening a FIFO blocks and reading a device may never end."""
    shown = checked_path(path)
    try:
        mode = os.stat(shown).st_mode
    except FileNotFoundError:
        raise error(f"{shown}: cannot read the file: no such file") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise error(f"{shown}: cannot read the file: {reason}") from None
    if not stat.S_ISREG(mode):
        raise error(f"{shown}: cannot read it: it is {file_kind(mode)}, not a regular file")
    return shown


def read_file_bytes(path: PathLike) -> bytes:
    """The whole file; a missing or unreadable file is a :class:`FormatError` naming the path."""
    path = checked_path(path)
    regular_file(path)
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise FormatError(f"{path}: cannot read the file: {reason}") from None


_DIGIT_MAP = bytes(0x31 if 0x30 <= i <= 0x39 else 0x30 for i in range(256))  # digits to "1"
_LONG_DIGIT_RUN = b"1" * 19  # the shortest integer literal that may not fit 64 bits


def _parsed_by_orjson(data: bytes) -> tuple[bool, Any]:
    """(True, value) when orjson parses ``data`` to what the ``json`` module would give, else
    (False, None) and the caller's ``json`` path decides (the result, or the error it names).

    orjson agrees with ``json`` wherever it accepts the text, except that it reads integers
    past 64 bits as floats; so a text with a run of 19 digits anywhere (strings included) is
    left to ``json``. It refuses what ``json`` accepts beyond JSON (NaN, lone surrogates,
    numbers past a double) and more nesting than 1024 levels: those fall back too
    (tests/io/test_read_json.py checks both parsers agree).

    Why: ``json.loads`` is the largest part of loading a ``tokenizer.json``, and orjson parses
    the real files in well under its time, digit check included (docs/history.md, "Loading
    vocabularies")."""
    try:
        import orjson
    except ImportError:
        return False, None
    if data.translate(_DIGIT_MAP).find(_LONG_DIGIT_RUN) >= 0:
        return False, None
    try:
        return True, orjson.loads(data[3:] if data.startswith(b"\xef\xbb\xbf") else data)
    except orjson.JSONDecodeError:
        return False, None


def read_json(path: PathLike) -> Any:
    """Parse a UTF-8 JSON file; invalid JSON is a :class:`FormatError` with line and column."""
    path = checked_path(path)
    data = read_file_bytes(path)
    parsed, value = _parsed_by_orjson(data)
    if parsed:
        return value
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            f"{path}: line {line}: not UTF-8 text (byte offset {exc.start})"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise FormatError(f"{path}: JSON nested too deeply to read") from None
