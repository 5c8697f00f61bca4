"""``tiktoken.load``: ``load_tiktoken_bpe``, ``data_gym_to_mergeable_bpe_ranks``,
``dump_tiktoken_bpe`` and the file helpers, with tiktoken's results and no network.

A path is read as it is. An address (``https://...``) is looked up offline only: the registered
encoding file with that address (``$CYBPE_ENCODINGS_DIR``, tiktoken's cache, checked by sha256),
else tiktoken's cache file for it; when there is none,
:class:`~cybpe.errors.MissingEncodingFileError` says where to put the file (cybpe never
downloads on its own; see :func:`cybpe.download`)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from typing import Optional

from cybpe.encodings.cache import find_file, tiktoken_cache_dir
from cybpe.errors import FormatError, HashMismatchError, MissingEncodingFileError, ParameterTypeError
from cybpe.formats.bytelevel import bytelevel_to_bytes
from cybpe.formats.tiktoken_lines import rank_lines_tokens
from cybpe.io.atomic import atomic_write_bytes, read_file_bytes


def _registered_file(address: str) -> Optional[str]:
    from cybpe.encodings.registry import encoding_entry, list_encoding_names

    for name in list_encoding_names():
        for file in encoding_entry(name).files:
            if file.url == address:
                try:
                    return find_file(file, name)
                except MissingEncodingFileError:
                    return None
    return None


def read_file(blobpath: str) -> bytes:
    """The bytes of a local path, or of an address's file found offline (see the module)."""
    if not isinstance(blobpath, (str, os.PathLike)):
        raise ParameterTypeError(f"blobpath must be a str, not {type(blobpath).__name__}")
    blobpath = os.fspath(blobpath)
    if "://" not in blobpath:
        return read_file_bytes(blobpath)
    found = _registered_file(blobpath)
    cache = tiktoken_cache_dir()
    cached = None if cache is None else os.path.join(cache, hashlib.sha1(blobpath.encode()).hexdigest())
    if found is None and cached is not None and os.path.isfile(cached):
        found = cached
    if found is None:
        where = f" or at {cached} (tiktoken's cache)" if cached else ""
        raise MissingEncodingFileError(
            f"{blobpath} is not available offline: put the file in $CYBPE_ENCODINGS_DIR (a "
            f"registered encoding's file){where}. cybpe never downloads on its own.", file=blobpath)
    return read_file_bytes(found)


def check_hash(data: bytes, expected_hash: str) -> bool:
    """Whether ``data`` has the sha256 ``expected_hash`` (hex)."""
    return hashlib.sha256(data).hexdigest() == expected_hash


def read_file_cached(blobpath: str, expected_hash: Optional[str] = None) -> bytes:
    """:func:`read_file`, checked against ``expected_hash`` (sha256 hex) when given:
    :class:`~cybpe.errors.HashMismatchError` (a ``ValueError``, as tiktoken raises) if it differs."""
    data = read_file(blobpath)
    if expected_hash and not check_hash(data, expected_hash):
        raise HashMismatchError(f"Hash mismatch for data from {blobpath} (expected {expected_hash}, "
                                f"found {hashlib.sha256(data).hexdigest()})")
    return data


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: Optional[str] = None) -> dict[bytes, int]:
    """A ``.tiktoken`` file as ``{token bytes: rank}``, read as tiktoken reads it (any
    whitespace between the fields, blank lines skipped, ranks as written: they may skip ids);
    a line that is not ``<base64> <int>`` raises :class:`~cybpe.errors.FormatError` (a
    ``ValueError``, as tiktoken raises)."""
    contents = read_file_cached(tiktoken_bpe_file, expected_hash)
    body = contents.replace(b"\r\n", b"\n").rstrip(b" \t\r\n\x0b\x0c") if contents else b""
    tokens = rank_lines_tokens(body) if body else None  # compiled: the usual, strict layout
    if tokens is not None:
        return {t: i for i, t in enumerate(tokens)}
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except (ValueError, binascii.Error):
            raise FormatError(f"Error parsing line {line[:80]!r} in {tiktoken_bpe_file}") from None
    return ranks


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Write ``{token: rank}`` as a ``.tiktoken`` file (lines sorted by rank), atomically; a
    local path only (tiktoken writes through blobfile)."""
    lines = [base64.b64encode(token) + b" " + str(rank).encode() + b"\n"
             for token, rank in sorted(bpe_ranks.items(), key=lambda item: item[1])]
    atomic_write_bytes(tiktoken_bpe_file, b"".join(lines))


def _data_gym_byte_order() -> list[int]:
    """GPT-2's byte order: the printable bytes other than space, then the others."""
    order = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    return order + [b for b in range(256) if b not in order]


def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file: str, encoder_json_file: str,
                                    vocab_bpe_hash: Optional[str] = None,
                                    encoder_json_hash: Optional[str] = None,
                                    clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """GPT-2's ``vocab.bpe`` + ``encoder.json`` as ``{token bytes: rank}``: the single bytes in
    GPT-2's order, then each merge's result in merge order, checked against ``encoder.json``
    (:class:`~cybpe.errors.FormatError` if they disagree, where tiktoken asserts)."""
    ranks = {bytes([b]): i for i, b in enumerate(_data_gym_byte_order())}
    merges_text = read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode("utf-8")
    try:
        for line in merges_text.split("\n")[1:-1]:
            first, second = line.split()
            ranks[bytelevel_to_bytes(first) + bytelevel_to_bytes(second)] = len(ranks)
        encoder = json.loads(read_file_cached(encoder_json_file, encoder_json_hash))
        loaded = {bytelevel_to_bytes(k): v for k, v in encoder.items()}
    except (ValueError, KeyError, AttributeError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"{vocab_bpe_file} / {encoder_json_file}: not GPT-2 files ({exc})") from None
    loaded.pop(b"<|endoftext|>", None)
    loaded.pop(b"<|startoftext|>", None)
    if clobber_one_byte_tokens:
        for token, rank in loaded.items():
            if len(token) == 1:
                ranks[token] = rank
    if ranks != loaded:
        raise FormatError(f"{encoder_json_file} does not give the ranks of {vocab_bpe_file}'s merges")
    return ranks
