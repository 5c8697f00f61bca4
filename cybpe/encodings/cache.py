"""Where an encoding's files are found, offline, and the check that each is the right file.

For each file an encoding registers (:class:`EncodingFile`), cybpe looks, in this order:

1. in every directory of ``$CYBPE_ENCODINGS_DIR`` (``os.pathsep``-separated), under the file's
   registered relative path (``cl100k_base.tiktoken``, ``gpt2/vocab.bpe``...) and then under
   the tiktoken cache name (the sha1 of its address, so a copied tiktoken cache works too);
2. in tiktoken's cache, under the sha1 of the address: the directory is ``$TIKTOKEN_CACHE_DIR``,
   else ``$DATA_GYM_CACHE_DIR``, else ``<tempfile.gettempdir()>/data-gym-cache`` (tiktoken's own
   rule; ``TIKTOKEN_CACHE_DIR=""`` turns tiktoken's cache off, and cybpe then does not read it).

The first file that exists is read and its sha256 compared with the registered one: a mismatch
is a :class:`~cybpe.errors.HashMismatchError` (cybpe never deletes or replaces a file it did not
write; tiktoken would delete a mismatching cache file and fetch it again). When no place has the
file, :class:`~cybpe.errors.MissingEncodingFileError` names the file, its sha256 and where to
put it. Nothing here uses the network.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Optional

from cybpe.errors import (
    FormatError,
    HashMismatchError,
    InvalidParameterError,
    MissingEncodingFileError,
    ParameterTypeError,
)

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class EncodingFile:
    """One file an encoding is built from.

    ``path``: where it sits below ``$CYBPE_ENCODINGS_DIR`` (a relative path with ``/``);
    ``sha256``: the lowercase hex sha256 of its bytes (checked on every load);
    ``url``: the address it is published at, if any: tiktoken's cache names the file by the
    sha1 of this string, and :func:`cybpe.download` fetches it from there."""

    path: str
    sha256: str
    url: Optional[str] = None

    def __post_init__(self) -> None:
        for field, value in (("path", self.path), ("sha256", self.sha256)):
            if not isinstance(value, str):
                raise ParameterTypeError(f"EncodingFile {field} must be a str, not {type(value).__name__}")
        if self.url is not None and not isinstance(self.url, str):
            raise ParameterTypeError(f"EncodingFile url must be a str or None, not {type(self.url).__name__}")
        parts = self.path.split("/")
        if not self.path or self.path.startswith("/") or "\\" in self.path or any(p in ("", ".", "..") for p in parts):
            raise InvalidParameterError(
                f"EncodingFile path {self.path!r} must be a relative path of plain names joined by '/'")
        if not _SHA256.fullmatch(self.sha256):
            raise InvalidParameterError(f"EncodingFile sha256 {self.sha256!r} is not 64 lowercase hex digits")

    @property
    def cache_name(self) -> Optional[str]:
        """The name tiktoken's cache gives this file: the hex sha1 of its address."""
        return None if self.url is None else hashlib.sha1(self.url.encode()).hexdigest()


def tiktoken_cache_dir() -> Optional[str]:
    """tiktoken's cache directory by tiktoken's rule; None when the cache is turned off (``""``)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        directory = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        directory = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return directory or None


def encodings_dirs() -> list[str]:
    """The directories of ``$CYBPE_ENCODINGS_DIR``, in order (empty entries skipped)."""
    return [d for d in os.environ.get("CYBPE_ENCODINGS_DIR", "").split(os.pathsep) if d]


def candidate_paths(file: EncodingFile) -> list[str]:
    """Every path where ``file`` is looked for, in the order of the module docstring."""
    out = []
    local = os.path.join(*file.path.split("/"))
    for directory in encodings_dirs():
        out.append(os.path.join(directory, local))
        if file.cache_name:
            out.append(os.path.join(directory, file.cache_name))
    cache = tiktoken_cache_dir()
    if cache is not None and file.cache_name:
        out.append(os.path.join(cache, file.cache_name))
    return out


def sha256_of_file(path: str) -> str:
    """The sha256 of a file (a file that cannot be read is a FormatError, as in every loader)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    return digest.hexdigest()


def check_sha256(path: str, file: EncodingFile, encoding: str) -> None:
    """:class:`HashMismatchError` unless the file at ``path`` has ``file``'s sha256."""
    found = sha256_of_file(path)
    if found != file.sha256:
        raise HashMismatchError(
            f"{path}: this is not the file {file.path!r} of encoding {encoding!r} (its sha256 is "
            f"{found}, the registered one {file.sha256}): a different version or a damaged copy. "
            "Replace or remove it; cybpe does not touch it.")


def find_file(file: EncodingFile, encoding: str) -> str:
    """The local path of ``file`` (checked by sha256), or :class:`MissingEncodingFileError`."""
    searched = candidate_paths(file)
    for path in searched:
        if os.path.isfile(path):
            check_sha256(path, file, encoding)
            return path
    raise MissingEncodingFileError(_missing_message(file, encoding, searched), encoding=encoding,
                                   file=file.path, sha256=file.sha256, searched=tuple(searched))


def _missing_message(file: EncodingFile, encoding: str, searched: list[str]) -> str:
    where = "\n".join(f"  {p}" for p in searched) or "  (nowhere: CYBPE_ENCODINGS_DIR is not set and tiktoken's cache is off)"
    put = [f"  $CYBPE_ENCODINGS_DIR/{file.path}" + ("" if encodings_dirs() else " (set CYBPE_ENCODINGS_DIR to a directory)")]
    cache = tiktoken_cache_dir()
    if cache is not None and file.cache_name:
        put.append(f"  {os.path.join(cache, file.cache_name)} (tiktoken's cache)")
    fetch = (f"or fetch it from {file.url} with cybpe.download({encoding!r}) (it is checked "
             "and written to tiktoken's cache)" if file.url else "no download address is registered for it")
    return (f"encoding {encoding!r} needs the file {file.path!r} (sha256 {file.sha256}), which is "
            f"in none of the places searched:\n{where}\nPut it at one of:\n" + "\n".join(put)
            + f"\n{fetch}. cybpe never downloads on its own.")
