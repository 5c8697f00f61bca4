"""tiktoken's ``.tiktoken`` rank files: one ``<base64 of the token bytes> <rank>`` line per token.

Loading takes a compiled fast path: one pass over the file's bytes checks every line and
decodes its base64 straight into the token's ``bytes`` (cybpe/formats/tiktoken_lines.pyx). Only when it declines are the lines walked one by one in Python to name
the first bad line.

Ranks are compared as text with ``b"%d" % i`` (no ``+1``, ``01`` or ``1_0``), so a file as
tiktoken writes it saves back byte for byte.
"""

from __future__ import annotations

import binascii
import os
from typing import Optional

from cybpe.io.atomic import PathLike, atomic_write_bytes, checked_path, read_file_bytes
from cybpe.formats.b64 import strict_b64decode
from cybpe.formats.tiktoken_lines import rank_lines_tokens
from cybpe.formats.vocab import Vocab
from cybpe.errors import FormatError


def _body(data: bytes) -> bytes:
    """The file without trailing blank lines (or a final newline), CRLF read as LF."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    return data.rstrip(b" \t\r\n\x0b\x0c")


def _first_bad_line(src: str, lines: list[bytes]) -> Optional[FormatError]:
    """The error for the first line that is not ``<base64> <rank>`` with the next rank, or
    None when every line is well formed."""
    seen: dict[bytes, int] = {}
    for i, line in enumerate(lines):
        where = f"{src}: line {i + 1}"
        fields = line.split(b" ")
        if len(fields) != 2 or not fields[0] or not fields[1]:
            shown = line[:60].decode("utf-8", "replace")
            return FormatError(f"{where}: expected '<base64 token> <rank>', got {shown!r}")
        b64, rank = fields
        if rank != b"%d" % i:
            shown = rank[:30].decode("utf-8", "replace")
            return FormatError(
                f"{where}: rank {shown!r} where {i} was expected "
                "(ranks must be 0, 1, 2, ... in order)"
            )
        try:
            token = strict_b64decode(b64)
        except binascii.Error as exc:
            return FormatError(f"{where}: invalid base64 ({exc})")
        if token in seen:
            return FormatError(
                f"{where}: token {token!r} already has rank {seen[token]} (line {seen[token] + 1})"
            )
        seen[token] = i
    return None


def load_tiktoken(path: PathLike) -> Vocab:
    """Read a ``.tiktoken`` file: lines ``<base64> <rank>`` (one space), ranks 0..n-1 in
    order, tokens distinct, strict base64; else :class:`FormatError` naming file and line.

    Trailing blank lines are allowed. The result is rank-only (``merges=None``) and has no
    special tokens: the format does not hold them.
    """
    src = checked_path(path)
    body = _body(read_file_bytes(path))
    if not body:
        raise FormatError(f"{src}: empty file, not a .tiktoken vocabulary")
    tokens = rank_lines_tokens(body)  # compiled; None when a line is not as the format says
    if tokens is None:
        located = _first_bad_line(src, body.split(b"\n"))
        raise (located or FormatError(f"{src}: not a valid .tiktoken file")) from None
    vocab = Vocab(tokens, None, {}, True)
    try:
        vocab.validate(src)
    except FormatError as exc:  # name the line of a duplicate token when there is one
        located = _first_bad_line(src, body.split(b"\n"))
        raise (located or exc) from None
    return vocab


def _check_ranks_are_ids(vocab: Vocab) -> None:
    """A merge list is dropped on save; refuse one that contradicts "the id is the rank"."""
    if vocab.merges is None:
        return
    n = len(vocab.tokens)
    index = {t: i for i, t in enumerate(vocab.tokens)}
    previous = -1
    for k, (a, b) in enumerate(vocab.merges):
        if not (0 <= a < n and 0 <= b < n):
            raise FormatError(f"merge {k} ({a}, {b}) names an unknown id")
        made = index.get(vocab.tokens[a] + vocab.tokens[b], -1)
        if not (a < made and b < made and made > previous):
            raise FormatError(
                f"cannot save as .tiktoken: merge {k} ({a}, {b}) makes token id {made}, so token "
                "ids do not follow the merge order and would not work as ranks"
            )
        previous = made


def save_tiktoken(path: PathLike, vocab: Vocab) -> None:
    """Write the ordinary tokens in id order (the id is the rank), atomically.

    Special tokens are *not* part of the ``.tiktoken`` format and are not written: keep them
    elsewhere (tiktoken takes them as a separate argument). A vocabulary with a merge list is
    accepted only if its ids work as ranks (each merge makes a token whose id is above both
    halves and above the previous merge's token); the merge list itself is not stored.
    """
    vocab.validate("vocabulary to save")
    _check_ranks_are_ids(vocab)
    b2a = binascii.b2a_base64
    data = b"".join(b2a(t, newline=False) + b" %d\n" % i for i, t in enumerate(vocab.tokens))
    atomic_write_bytes(path, data)
