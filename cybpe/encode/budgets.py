"""Token budgets over a Tokenizer's public methods: truncation at a character boundary, text
chunks whose encodings fit, and padded batches as 2-D arrays.

How each relates to encoding the whole text (tests/encode/test_offsets_budgets.py checks every line):

* ``truncate(text, n) -> (ids, stop)``: ``ids == encode(text)[:len(ids)]``, ``len(ids) <= n``,
  ``decode(ids) == text[:stop]`` (for text without lone surrogates and no normalizer), and ``stop``
  is the last boundary of the full encoding within the budget that is also a character boundary
  (a boundary inside a multi-byte character is skipped). Only about ``n`` ids are encoded.
* ``chunks(text, n, overlap)``: windows ``text[start:end]`` whose *own* encodings have at most
  ``n`` ids. Windows end at boundaries of the full encoding that are character boundaries; where
  re-encoding a window alone would need more than ``n`` ids (its last piece can split differently
  once cut), the window is shortened to the previous such boundary. Without overlap the windows
  tile the text; with ``overlap=k`` each window starts at the latest boundary at least ``k`` ids of
  the full encoding before the previous window's end (always moving forward), or later when a
  window from there could not reach past the previous window's end: each window ends further
  than the one before, and starts no later than that one's end, so the windows cover the text.
* ``padded_batch``: row ``j`` holds ``encode(texts[j])[:max_length]`` (plain id truncation, as HF
  tokenizers truncates), padded with ``pad_id`` on the right or left; the mask is 1 on ids.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple, Optional, Sequence

import numpy as np

from cybpe.errors import InvalidParameterError, ParameterTypeError, describe


class TextChunk(NamedTuple):
    """A window ``text[start:end]`` of the chunked text."""

    text: str
    start: int
    end: int


def char_boundaries(spans: np.ndarray, text_length: int) -> tuple[np.ndarray, np.ndarray]:
    """(token indices k, character positions) of the boundaries before token k that fall between
    characters, from 0 to len(ids) inclusive (the text end)."""
    n = len(spans)
    if n == 0:
        return np.zeros(1, dtype=np.int64), np.array([0], dtype=np.int64)
    clean = np.empty(n + 1, dtype=bool)
    clean[0] = clean[n] = True
    clean[1:n] = spans[1:, 0] >= spans[:-1, 1]
    ks = np.flatnonzero(clean)
    positions = np.append(spans[:, 0], text_length)[ks]
    return ks, positions


def check_budget(max_tokens: int, name: str = "max_tokens") -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)):
        raise ParameterTypeError(f"{name} must be a non-negative int, not {describe(max_tokens)}")
    if max_tokens < 0:
        raise InvalidParameterError(f"{name} must be a non-negative int, not {max_tokens}")
    # larger budgets mean "no limit" (nothing has 2**62 tokens), and fit the C side's ssize_t
    return int(min(max_tokens, 1 << 62))


def truncate(ids: np.ndarray, spans: np.ndarray, text_length: int, max_tokens: int) -> tuple[np.ndarray, int]:
    """The longest prefix of ``ids`` (a prefix of the full encoding, with its ``spans``) within
    ``max_tokens`` that ends at a character boundary, and that boundary."""
    if len(ids) <= max_tokens:
        return ids, text_length
    ks, positions = char_boundaries(spans[:max_tokens + 1], -1)
    at = int(np.searchsorted(ks, max_tokens, side="right")) - 1
    return ids[:ks[at]], int(positions[at])


def chunks(tokenizer, text: str, max_tokens: int, overlap: int, allowed_special, disallowed_special
           ) -> Iterator[TextChunk]:
    max_tokens = check_budget(max_tokens)
    overlap = check_budget(overlap, "overlap")
    if max_tokens == 0 or overlap >= max_tokens:
        raise InvalidParameterError(f"need 0 <= overlap < max_tokens (got overlap={overlap}, max_tokens={max_tokens})")
    ids, spans = tokenizer.encode_with_offsets_to_numpy(
        text, allowed_special=allowed_special, disallowed_special=disallowed_special)
    ks, positions = char_boundaries(spans, len(text))
    n = len(ids)
    first = 0  # index into ks of the window start
    previous_last = 0  # index into ks of the previous window's end
    while ks[first] < n:
        last = int(np.searchsorted(ks, ks[first] + max_tokens, side="right")) - 1
        while last > first:
            window = text[positions[first]:positions[last]]
            if len(tokenizer.encode(window, allowed_special=allowed_special,
                                    disallowed_special=())) <= max_tokens:
                break
            last -= 1
        if last == first:
            raise InvalidParameterError(
                f"max_tokens={max_tokens} is too small: the character at {int(positions[first])} "
                f"needs more tokens than that")
        if last <= previous_last:
            # This window would end where the previous one did (its re-encoding had to be
            # shortened): it adds nothing. Start later, still inside the previous window, until
            # a window reaches past its end (at the latest, the one starting at that end).
            first += 1
            continue
        previous_last = last
        yield TextChunk(text[positions[first]:positions[last]], int(positions[first]), int(positions[last]))
        if ks[last] == n:
            return
        nxt = int(np.searchsorted(ks, ks[last] - overlap, side="right")) - 1
        first = nxt if nxt > first else first + 1


def padded_batch(rows: Sequence[np.ndarray], max_length: Optional[int], padding: str, truncation: bool,
                 padding_side: str, pad_id: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ids (already cut to max_length when truncating) as a (len(rows), width) array and
    its attention mask."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    longest = int(lengths.max()) if len(rows) else 0
    if max_length is not None and longest > max_length:
        j = int(np.argmax(lengths))
        raise InvalidParameterError(
            f"text {j} takes {longest} tokens, more than max_length={max_length}; "
            f"pass truncation=True to cut it")
    width = max_length if padding == "max_length" else longest
    flat = np.concatenate(rows) if len(rows) else np.zeros(0, dtype=np.uint32)
    return fill_padded(flat, lengths, width, padding_side, pad_id, dtype)


def fill_padded(flat: np.ndarray, lengths: np.ndarray, width: int, padding_side: str, pad_id: int,
                dtype) -> tuple[np.ndarray, np.ndarray]:
    """Flat ids (rows laid end to end, row j has lengths[j] ids) as a padded 2-D array + mask."""
    columns = np.arange(width)
    if padding_side == "right":
        mask = columns[None, :] < lengths[:, None]
    else:
        mask = columns[None, :] >= (width - lengths)[:, None]
    out = np.full((len(lengths), width), pad_id, dtype=dtype)
    out[mask] = flat
    return out, mask.astype(dtype)


def check_padding(max_length, padding, truncation, padding_side) -> None:
    if max_length is not None:
        check_budget(max_length, "max_length")
    if padding not in ("longest", "max_length"):
        raise InvalidParameterError(f"padding must be 'longest' or 'max_length', not {padding!r}")
    if padding_side not in ("right", "left"):
        raise InvalidParameterError(f"padding_side must be 'right' or 'left', not {padding_side!r}")
    if padding == "max_length" and max_length is None:
        raise InvalidParameterError("padding='max_length' needs max_length=")
    if truncation and max_length is None:
        raise InvalidParameterError("truncation=True needs max_length=")
