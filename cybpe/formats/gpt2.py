"""The original GPT-2 pair of files: ``encoder.json`` and ``vocab.bpe``.

* ``encoder.json`` maps the ByteLevel string of each token (see :mod:`cybpe.formats.bytelevel`) to its
  id, plus ``"<|endoftext|>": 50256``.
* ``vocab.bpe`` starts with a ``#version`` line, then one merge per line: two ByteLevel strings
  separated by one space, in rank order.

Which ``encoder.json`` entries are special tokens is not written anywhere, so the loader decides:
``<|endoftext|>``, any entry that is not a ByteLevel string, and an entry spelled ``<...>`` that
no merge produces and whose id comes after every ordinary id (an added token). Any other entry
of two or more characters that no merge produces is a :class:`FormatError`: it is what a
truncated or mismatched ``vocab.bpe`` looks like (an empty one would otherwise turn 50,000
tokens into specials). The saver refuses vocabularies that this rule would read back
differently.
"""

from __future__ import annotations

import json
import os
from typing import Optional

from cybpe.io.atomic import PathLike, atomic_write_bytes, atomic_write_text, checked_path, read_file_bytes, read_json
from cybpe.formats.bytelevel import bytelevel_to_bytes, bytes_to_bytelevel, is_bytelevel
from cybpe.formats.merges import canonical_merges, resolve_merge
from cybpe.formats.vocab import Vocab
from cybpe.errors import FormatError

__all__ = ["canonical_merges", "load_gpt2", "save_gpt2"]

#: The special token that the GPT-2 files carry (id 50256 in the original files).
ENDOFTEXT = "<|endoftext|>"
VERSION_LINE = "#version: 0.2"


def _read_merge_lines(src: str) -> list[tuple[int, str, str]]:
    """``(line number, left, right)`` for every merge line of a ``vocab.bpe`` file."""
    data = read_file_bytes(src)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(f"{src}: line {line}: not UTF-8 text") from None
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    merges: list[tuple[int, str, str]] = []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if number == 1 and line.startswith("#version"):
            continue
        left, sep, right = line.partition(" ")
        if not sep or not left or not right or " " in right:
            raise FormatError(
                f"{src}: line {number}: expected a merge 'left right', got {line[:60]!r}"
            )
        merges.append((number, left, right))
    return merges


def load_gpt2(encoder_json_path: PathLike, vocab_bpe_path: PathLike) -> Vocab:
    """Read GPT-2's ``encoder.json`` and ``vocab.bpe`` (``ignore_merges=True``, as tiktoken's
    ``gpt2`` encoding looks whole pieces up first)."""
    enc_src = checked_path(encoder_json_path, "encoder_json")
    bpe_src = checked_path(vocab_bpe_path, "vocab_bpe")
    encoder = read_json(encoder_json_path)
    if not isinstance(encoder, dict):
        raise FormatError(f"{enc_src}: not a GPT-2 encoder.json (expected an object)")
    for name, tid in encoder.items():
        if not isinstance(tid, int) or isinstance(tid, bool) or tid < 0:
            raise FormatError(f"{enc_src}: entry {name!r} has id {tid!r}, not an integer >= 0")
    merge_lines = _read_merge_lines(bpe_src)
    produced = {left + right for _, left, right in merge_lines}
    strings: dict[int, str] = {}
    specials: dict[str, int] = {}
    unmade: dict[str, int] = {}  # ByteLevel entries no merge produces
    for name, tid in encoder.items():
        if name == ENDOFTEXT or not is_bytelevel(name):
            specials[name] = tid
        elif len(name) > 1 and name not in produced:
            unmade[name] = tid
        elif tid in strings:
            raise FormatError(f"{enc_src}: entries {strings[tid]!r} and {name!r} share id {tid}")
        else:
            strings[tid] = name
    top = max(strings, default=-1)
    for name, tid in sorted(unmade.items(), key=lambda kv: kv[1]):
        if tid > top and _looks_added(name):
            specials[name] = tid
            continue
        raise FormatError(
            f"{enc_src}: id {tid}: {name!r} has that id but no merge in {bpe_src} produces it "
            f"({len(merge_lines)} merges; {len(unmade)} entries are made by none: is {bpe_src} "
            "truncated or from another vocabulary?)"
        )
    n = len(strings)
    missing = next((i for i in range(n) if i not in strings), None)
    if missing is not None:
        holders = [s for s, i in specials.items() if i == missing and s != ENDOFTEXT]
        why = (
            f": {holders[0]!r} has that id but no merge in {bpe_src} produces it"
            if holders and is_bytelevel(holders[0])
            else ""
        )
        raise FormatError(
            f"{enc_src}: the {n} ordinary token ids are not 0..{n - 1} (id {missing} is "
            f"missing{why})"
        )
    tokens = [bytelevel_to_bytes(strings[i]) for i in range(n)]
    ids = {s: i for i, s in strings.items()}
    merges: list[tuple[int, int]] = []
    for number, left, right in merge_lines:
        merges.append(resolve_merge(ids, left, right, f"{bpe_src}: line {number}", enc_src))
    vocab = Vocab(tokens, merges, specials, True)
    vocab.validate(f"{enc_src} + {bpe_src}")
    return vocab


def _looks_added(name: str) -> bool:
    """Spelled like an added (special) token: ``<...>``, as ``<|endoftext|>`` or ``<pad>``."""
    return len(name) > 2 and name.startswith("<") and name.endswith(">")


def save_gpt2(encoder_json_path: PathLike, vocab_bpe_path: PathLike, vocab: Vocab,
              merges: Optional[list[tuple[int, int]]] = None) -> None:
    """Write ``encoder.json`` and ``vocab.bpe``, each atomically (not the pair as one).

    ``merges`` (default: the vocabulary's own; :func:`canonical_merges` for a rank-only one) is
    the list written (``Tokenizer.to_gpt2`` passes one that readers apply exactly). Raises :class:`FormatError` when the
    files could not be read back as the same vocabulary: a multi-byte token that no merge
    produces, or a special token spelled like an ordinary token's ByteLevel string.
    ``ignore_merges`` is not stored (the loader sets it).
    """
    vocab.validate("vocabulary to save")
    if merges is None:
        merges = canonical_merges(vocab.tokens) if vocab.merges is None else vocab.merges
    strings = [bytes_to_bytelevel(t) for t in vocab.tokens]
    index = {t: i for i, t in enumerate(vocab.tokens)}
    produced_ids = {index[vocab.tokens[a] + vocab.tokens[b]] for a, b in merges}
    for i, tok in enumerate(vocab.tokens):
        if len(tok) > 1 and i not in produced_ids:
            raise FormatError(
                f"cannot save as GPT-2 files: token id {i} ({tok!r}) is produced by no merge, "
                "so it would be read back as a special token"
            )
    ordinary = set(strings)
    for name, tid in vocab.special_tokens.items():
        # Otherwise the loader sees it as special: it is <|endoftext|>, not ByteLevel, or
        # (being no ordinary token's string) no merge produces it, it is spelled <...> and its
        # id follows the ordinary ids.
        if name in ordinary:
            raise FormatError(
                f"cannot save as GPT-2 files: special token {name!r} is spelled like the "
                "ByteLevel string of an ordinary token (encoder.json keys must differ)"
            )
        if name != ENDOFTEXT and is_bytelevel(name) and len(name) > 1 and not _looks_added(name):
            raise FormatError(
                f"cannot save as GPT-2 files: special token {name!r} would be read back as an "
                "ordinary token that no merge produces (GPT-2 files mark added tokens only by "
                "spelling them <...>)"
            )
    encoder = {s: i for i, s in enumerate(strings)}
    encoder.update(sorted(vocab.special_tokens.items(), key=lambda kv: kv[1]))
    lines = [VERSION_LINE]
    lines.extend(f"{strings[a]} {strings[b]}" for a, b in merges)
    atomic_write_text(vocab_bpe_path, "\n".join(lines) + "\n")
    atomic_write_bytes(encoder_json_path, json.dumps(encoder).encode("ascii"))
