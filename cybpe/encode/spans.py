"""Token ids with character offsets, and encodes that stop at a token budget.

The rule for offsets (HF tokenizers' byte-level rule, with no whitespace trimming, which is what
the Llama 3, Qwen and GPT-4o ``tokenizer.json`` files ask for): a token covering the UTF-8 bytes
``[b, e)`` of the text spans from the character holding byte ``b`` to just past the character
holding byte ``e - 1``. Offsets are ``str`` indices (code points) into the caller's text. A token
made of part of a multi-byte character spans that whole character, and so does every other token
holding bytes of it, so spans of neighbouring tokens may overlap by one character. A lone
surrogate counts as the one character it is (it is encoded as U+FFFD, as tiktoken does); a high
surrogate followed by a low one is encoded as the one character they make (tiktoken again), and
a token holding it spans both.

Under an NFC normalizer, a token of the normalized text maps back to the original characters as
HF tokenizers maps it (see nfc_alignment): from the original character behind its first
normalized character to the one behind its last.

A budget (``limit``) encodes only until more than ``limit`` ids exist, at a piece end: the ids are
then a prefix of the full encoding.
"""

from __future__ import annotations

import unicodedata
from typing import Optional

import numpy as np

from cybpe._c.nfc import canonical_order, nfc
from cybpe.pretokenize.text import clean_surrogates
from cybpe.encode.fastpath import encode_scanned_spans

EMPTY_SPANS = np.zeros((0, 2), dtype=np.int64)


def spans_of_ids(token_lengths, ids: np.ndarray, text: str) -> np.ndarray:
    """(n, 2) character spans of ordinary ``ids`` laid end to end over ``text`` (Python; the
    compiled path does the same in C). ``token_lengths(id)`` is a token's length in bytes."""
    data = clean_surrogates(text).encode("utf-8")
    starts = np.frombuffer(data, dtype=np.uint8)
    # char_of_byte[b]: the index of the character holding byte b
    char_of_byte = np.cumsum((starts & 0xC0) != 0x80) - 1
    lengths = np.fromiter((token_lengths(int(i)) for i in ids), dtype=np.int64, count=len(ids))
    ends = np.cumsum(lengths)
    out = np.empty((len(ids), 2), dtype=np.int64)
    if len(ids):
        out[:, 0] = char_of_byte[ends - lengths]
        out[:, 1] = char_of_byte[ends - 1] + 1
    return out


def nfc_with_changes(text: str) -> list[tuple[str, int]]:
    """NFC of ``text`` as ``(character, change)`` pairs, the bookkeeping HF tokenizers' alignments
    are built from: 0 = takes the place of the next original character, 1 = inserted (a later
    part of a decomposition), -n = also swallows the n original characters after that one.

    Canonical decomposition (each character's parts: change 0 for the first, 1 for the rest),
    stable reordering of each run of combining marks by combining class, then canonical
    composition (a starter absorbing a mark adds the mark's change minus one)."""
    combining = unicodedata.combining
    decomposed: list[tuple[str, int]] = []
    for ch in text:
        parts = unicodedata.normalize("NFD", ch)
        decomposed.append((parts[0], 0))
        decomposed.extend((d, 1) for d in parts[1:])
    ordered = canonical_order(decomposed, lambda item: combining(item[0]))

    def compose(a: str, b: str) -> Optional[str]:
        joined = unicodedata.normalize("NFC", a + b)
        return joined if len(joined) == 1 else None

    out: list[tuple[str, int]] = []
    composee: Optional[tuple[str, int]] = None
    last_class: Optional[int] = None
    blocked: list[tuple[str, int]] = []  # marks that could not join the composee, in order
    for ch, change in ordered:
        cls = combining(ch)
        if composee is None:
            if cls:
                out.append((ch, change))
            else:
                composee = (ch, change)
            continue
        if last_class is not None and last_class >= cls:  # blocked from the composee
            if cls == 0:
                out.append(composee)
                out.extend(blocked)
                blocked, last_class, composee = [], None, (ch, change)
            else:
                blocked.append((ch, change))
                last_class = cls
            continue
        joined = compose(composee[0], ch)
        if joined is not None:
            composee = (joined, composee[1] + change - 1)
        elif cls == 0 and last_class is None:
            out.append(composee)
            composee = (ch, change)
        else:
            blocked.append((ch, change))
            last_class = cls
    if composee is not None:
        out.append(composee)
    out.extend(blocked)
    return out


def nfc_alignment(text: str, normalized: str) -> Optional[np.ndarray]:
    """For each character of ``normalized`` (= NFC of ``text``), the (start, end) span of the
    original characters it stands for, as HF tokenizers aligns them: a character takes the place
    of the next original one, an inserted one shares its predecessor's span ((0, 0) at the very
    start). None if the bookkeeping does not rebuild ``normalized``."""
    changes = nfc_with_changes(text)
    if "".join(c for c, _ in changes) != normalized:
        return None
    align = np.empty((len(changes), 2), dtype=np.int64)
    at = 0  # the next original character
    for k, (_, change) in enumerate(changes):
        if change > 0:
            align[k] = align[k - 1] if k else (0, 0)
        else:
            align[k] = (at, at + 1)
            at += 1 - change
    return align


def surrogate_alignment(text: str) -> np.ndarray:
    """For each character of ``clean_surrogates(text)``, its (start, end) span in ``text``: two
    for a joined surrogate pair, else one."""
    out = []
    k, n = 0, len(text)
    while k < n:
        joined = ("\ud800" <= text[k] <= "\udbff" and k + 1 < n and "\udc00" <= text[k + 1] <= "\udfff")
        out.append((k, k + 2 if joined else k + 1))
        k += 2 if joined else 1
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def map_through(align: Optional[np.ndarray], spans: np.ndarray, original_length: int) -> np.ndarray:
    """Spans over a normalized text mapped to the original (every span is the whole text when
    no alignment exists)."""
    if align is None:
        out = np.empty_like(spans)
        out[:, 0] = 0
        out[:, 1] = original_length
        return out
    out = np.empty_like(spans)
    if len(spans):
        out[:, 0] = align[spans[:, 0], 0]
        out[:, 1] = align[spans[:, 1] - 1, 1]
    return out


def ordinary_spans(encoder, pretokenizer, normalizer: Optional[str], text: str, limit: int = -1,
                   offsets: bool = True) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """(ids, spans) of ``text`` as ordinary text (no special tokens), stopping past ``limit``
    ids when ``limit >= 0``. ``spans`` is None unless ``offsets``."""
    original = text
    cleaned = clean_surrogates(original)
    if normalizer is not None:  # (NFC, the one normalizer a Tokenizer takes)
        text = nfc(cleaned)
    else:
        text = cleaned
    result = None
    if pretokenizer.uses_scanner:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = clean_surrogates(text).encode("utf-8")
        result = encode_scanned_spans(encoder, pretokenizer.scanner, data, limit, offsets)
    if result is None:  # regex pre-tokenizer, or a compiled pattern past its step budget
        pieces = (pretokenizer.scanner if pretokenizer.uses_scanner else pretokenizer).split(clean_surrogates(text))
        if limit >= 0:  # every non-empty piece gives at least one id: encode limit+1 pieces at a time
            parts, total, k = [], 0, 0
            while k < len(pieces) and total <= limit:
                take = limit + 1 - total
                parts.append(encoder.encode_str_pieces(pieces[k:k + take]))
                total += len(parts[-1])
                k += take
            ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
        else:
            ids = encoder.encode_str_pieces(pieces)
        spans = spans_of_ids(lambda i: len(encoder.token_bytes(i)), ids, text) if offsets else None
        result = (ids, spans)
    ids, spans = result
    if spans is not None and text is not cleaned and text != cleaned:
        spans = map_through(nfc_alignment(cleaned, text), spans, len(cleaned))
    if spans is not None and len(cleaned) != len(original):
        spans = map_through(surrogate_alignment(original), spans, len(original))
    return ids, spans
