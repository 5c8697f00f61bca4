"""tiktoken's ``.tiktoken`` rank files: one ``<base64 of the token bytes> <rank>`` line per token.

Loading takes a compiled fast path: one pass over the file's bytes checks every line and
decodes its base64 straight into the token's ``bytes`` (cybpe/formats/tiktoken_lines.pyx). Only when it declines are the lines walked one by one in Python to name
the first bad line.

Ranks are compared as text with ``b"%d" % i`` (no ``+1``, ``01`` or ``1_0``), so a file as
tiktoken writes it saves back byte for byte. Ranks must increase; they may skip ids (OpenAI's
p50k_base.tiktoken skips 50256, the id of its ``<|endoftext|>``): a skipped rank is a gap
(``None``) in :attr:`Vocab.tokens`, and at most as many ids may be skipped as there are lines
(so a stray huge rank cannot make the loader allocate without bound).
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


def _parse_lines(src: str, lines: list[bytes]) -> "list[Optional[bytes]] | FormatError":
    """The tokens by rank (``None`` at a skipped rank), or the error for the first line that is
    not ``<base64> <rank>`` with a rank above the previous one."""
    seen: dict[bytes, tuple[int, int]] = {}  # token -> (rank, line index)
    tokens: list[Optional[bytes]] = []
    for i, line in enumerate(lines):
        where = f"{src}: line {i + 1}"
        fields = line.split(b" ")
        if len(fields) != 2 or not fields[0] or not fields[1]:
            shown = line[:60].decode("utf-8", "replace")
            return FormatError(f"{where}: expected '<base64 token> <rank>', got {shown!r}")
        b64, rank_text = fields
        expected = len(tokens)
        rank = int(rank_text) if rank_text.isdigit() and len(rank_text) <= 10 else -1
        if rank != expected and (rank < expected or rank_text != b"%d" % rank):
            shown = rank_text[:30].decode("utf-8", "replace")
            return FormatError(
                f"{where}: rank {shown!r} where {expected} or more was expected "
                "(ranks are decimal integers in increasing order)"
            )
        if (expected - len(seen)) + (rank - expected) > len(lines):  # ids skipped so far
            return FormatError(f"{where}: rank {rank} makes the ranks skip more ids than the "
                               f"file has lines ({len(lines)}): not a .tiktoken vocabulary")
        try:
            token = strict_b64decode(b64)
        except binascii.Error as exc:
            return FormatError(f"{where}: invalid base64 ({exc})")
        if token in seen:
            return FormatError(
                f"{where}: token {token!r} already has rank {seen[token][0]} (line {seen[token][1] + 1})"
            )
        seen[token] = (rank, i)
        tokens.extend([None] * (rank - expected))
        tokens.append(token)
    return tokens


def _first_bad_line(src: str, lines: list[bytes]) -> Optional[FormatError]:
    """The error for the first bad line, or None when every line is well formed."""
    parsed = _parse_lines(src, lines)
    return parsed if isinstance(parsed, FormatError) else None


def load_tiktoken(path: PathLike) -> Vocab:
    """Read a ``.tiktoken`` file: lines ``<base64> <rank>`` (one space), ranks increasing from
    0 (a skipped rank is a gap: ``None`` in the tokens), tokens distinct, strict base64; else
    :class:`FormatError` naming file and line.

    Trailing blank lines are allowed. The result is rank-only (``merges=None``) and has no
    special tokens: the format does not hold them.
    """
    src = checked_path(path)
    body = _body(read_file_bytes(path))
    if not body:
        raise FormatError(f"{src}: empty file, not a .tiktoken vocabulary")
    tokens = rank_lines_tokens(body)  # compiled; None when a line is not as the format says
    if tokens is None:  # a bad line, or ranks that skip ids (read here, in Python)
        parsed = _parse_lines(src, body.split(b"\n"))
        if isinstance(parsed, FormatError):
            raise parsed from None
        tokens = parsed
    vocab = Vocab(tokens, None, {}, True)
    try:
        vocab.validate(src)
    except FormatError as exc:  # name the line of a duplicate token when there is one
        located = _first_bad_line(src, body.split(b"\n"))
        if located is None and vocab.gaps:  # a skipped rank is the likely cause: name its line
            first = min(vocab.gaps)
            located = FormatError(f"{src}: line {first + 1}: the ranks skip id {first}; "
                                  f"{str(exc).removeprefix(src + ': ')}")
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
    """Write the ordinary tokens in id order (the id is the rank; a gap is no line), atomically.

    Special tokens are *not* part of the ``.tiktoken`` format and are not written: keep them
    elsewhere (tiktoken takes them as a separate argument). A vocabulary with a merge list is
    accepted only if its ids work as ranks (each merge makes a token whose id is above both
    halves and above the previous merge's token); the merge list itself is not stored.
    """
    vocab.validate("vocabulary to save")
    _check_ranks_are_ids(vocab)
    b2a = binascii.b2a_base64
    data = b"".join(b2a(t, newline=False) + b" %d\n" % i for i, t in enumerate(vocab.tokens) if t is not None)
    atomic_write_bytes(path, data)
