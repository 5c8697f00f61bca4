"""Pure-Python reference BPE merge trainer: slow, simple, obviously correct.

It defines the semantics that the Cython trainer (``cybpe.training.trainer.train_merges``) must reproduce
exactly, and the differential tests compare the two:

* A pair's count is the sum, over chunks, of the chunk's multiplicity times the number of adjacent
  windows holding the pair (overlapping windows, so the chunk ``a a a`` counts 2 for ``(a, a)``).
  The table is kept as that sum: whenever a merge changes a chunk, the chunk's old windows are
  subtracted and its new windows added, each recounted from the symbol sequence. (Recounting every
  chunk at every step gives the same table and was too slow for the real-text tests: 80 ms per
  step on 220 KB of unique chunks.)
* The pair with the highest count wins. Among equal counts the smallest ``(left, right)`` wins,
  where ids are compared either as they are (``tie_break="ids"``) or with the 256 byte ids
  permuted into HuggingFace ByteLevel code-point order (``tie_break="huggingface"``).
* The merge is applied left to right without overlap in every chunk (``a a a`` -> ``[aa] a``).
* The merged token gets the next fresh id, unless its bytes already are a token: then the existing
  id is reused, the merge is still recorded, and it does not count as a new token.
* Rules remove candidates: with ``max_token_length`` a pair is a candidate only if its two tokens
  hold fewer bytes than that together, or are two single bytes (HF ``BpeTrainer``); a ``veto``
  returning true for ``(left_bytes, right_bytes)`` removes the pair. The best remaining pair wins.
* ``forced_merges`` are applied first, in order, whatever their counts (resuming from a base).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

from cybpe.errors import InvalidParameterError

from cybpe.tie_breaks import TIE_BREAKS  # the one list (also the reference's and train()'s)


@dataclass
class ReferenceMergeResult:
    """Same fields as ``cybpe.training.trainer.MergeResult``."""

    merges: list[tuple[int, int]] = field(default_factory=list)
    new_ids: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    token_bytes: list[bytes] = field(default_factory=lambda: [bytes([i]) for i in range(256)])
    stop_reason: str = "vocab_size"


def huggingface_byte_order() -> list[int]:
    """Bytes in the order HF's ByteLevel alphabet sorts them (by the code point each maps to).

    Printable bytes map to themselves, so they come first in byte order; every other byte maps to
    ``256 + n`` in byte order, so they follow in byte order.
    """
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    others = [b for b in range(256) if b not in set(printable)]
    return printable + others


def _tie_key(tie_break: str) -> Callable[[int], int]:
    """Map a token id to the integer that ranks it among equal counts (smaller wins)."""
    if tie_break == "ids":
        return lambda token: token
    if tie_break == "huggingface":
        rank_of_byte = {b: r for r, b in enumerate(huggingface_byte_order())}
        return lambda token: rank_of_byte[token] if token < 256 else token
    raise InvalidParameterError(
        f"tie_break must be one of {', '.join(repr(t) for t in TIE_BREAKS)}; got {tie_break!r}"
    )


def merge_word(word: list[int], left: int, right: int, new_id: int) -> list[int]:
    """Replace each ``left right`` in ``word`` by ``new_id``, scanning left to right, no overlap."""
    out: list[int] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == left and word[i + 1] == right:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def check_inputs(chunks: Sequence[bytes], weights: Iterable[int], n_new_tokens: int,
                 min_frequency: int) -> list[int]:
    """Validate the common arguments; return the weights as a list of Python ints."""
    weight_list = [operator.index(w) for w in weights]
    if len(weight_list) != len(chunks):
        raise InvalidParameterError(
            f"chunks and weights differ in length ({len(chunks)} != {len(weight_list)})"
        )
    if any(w <= 0 for w in weight_list):
        raise InvalidParameterError("every weight must be > 0")
    if n_new_tokens < 0:
        raise InvalidParameterError(f"n_new_tokens must be >= 0; got {n_new_tokens}")
    if min_frequency < 0:
        raise InvalidParameterError(f"min_frequency must be >= 0; got {min_frequency}")
    return weight_list


def reference_train_merges(chunks: Sequence[bytes], weights: Iterable[int], n_new_tokens: int, *,
                           min_frequency: int = 0, tie_break: str = "ids",
                           seed_tokens: Sequence[bytes] = (),
                           max_token_length: Optional[int] = None,
                           veto: Optional[Callable[[bytes, bytes], object]] = None,
                           forced_merges: Sequence[tuple[int, int]] = (),
                           forced_counts: Optional[Sequence[int]] = None) -> ReferenceMergeResult:
    """Learn merges until ``n_new_tokens`` new tokens exist (see the module docstring).

    ``seed_tokens``: tokens that exist before training, with ids 256, 257, ...; merges that spell
    one of them reuse its id. ``forced_merges``: id pairs, each spelling a byte or seed token,
    reported with ``forced_counts`` (zeros by default).
    """
    tie_key = _tie_key(tie_break)
    weight_list = check_inputs(chunks, weights, n_new_tokens, min_frequency)
    words = [(list(c), w) for c, w in zip(chunks, weight_list) if len(c) >= 2]
    result = ReferenceMergeResult()
    result.token_bytes.extend(seed_tokens)
    id_of_bytes = {tok: i for i, tok in enumerate(result.token_bytes)}
    if len(id_of_bytes) != len(result.token_bytes) or any(len(s) < 2 for s in seed_tokens):
        raise InvalidParameterError("seed tokens must be distinct and longer than one byte")
    counts: dict[tuple[int, int], int] = {}
    for word, w in words:
        _add_windows(counts, word, w)
    for k, (left, right) in enumerate(forced_merges):
        new_id = id_of_bytes.get(result.token_bytes[left] + result.token_bytes[right])
        if new_id is None:
            raise InvalidParameterError(f"forced merge ({left}, {right}) spells no seed token")
        result.merges.append((left, right))
        result.new_ids.append(new_id)
        result.counts.append(0 if forced_counts is None else forced_counts[k])
        words = _apply(words, counts, left, right, new_id)

    def allowed(pair: tuple[int, int]) -> bool:
        left_bytes, right_bytes = result.token_bytes[pair[0]], result.token_bytes[pair[1]]
        total = len(left_bytes) + len(right_bytes)
        if max_token_length is not None and total >= max_token_length and total > 2:
            return False
        return veto is None or not veto(left_bytes, right_bytes)

    refused: set[tuple[int, int]] = set()  # the rules depend on the bytes only: ask once
    created = 0
    while created < n_new_tokens:
        candidates = {pair: c for pair, c in counts.items() if pair not in refused}
        if not candidates:
            result.stop_reason = "no_pairs"
            return result
        top = max(candidates.values())
        best = min((pair for pair, c in candidates.items() if c == top),
                   key=lambda pair: (tie_key(pair[0]), tie_key(pair[1])))
        if not allowed(best):
            refused.add(best)
            continue
        if counts[best] < min_frequency:
            result.stop_reason = "min_frequency"
            return result
        left, right = best
        spelled = result.token_bytes[left] + result.token_bytes[right]
        new_id = id_of_bytes.get(spelled)
        if new_id is None:
            new_id = len(result.token_bytes)
            result.token_bytes.append(spelled)
            id_of_bytes[spelled] = new_id
            created += 1
        result.merges.append(best)
        result.new_ids.append(new_id)
        result.counts.append(counts[best])
        words = _apply(words, counts, left, right, new_id)
    result.stop_reason = "vocab_size"
    return result


def _apply(words: list[tuple[list[int], int]], counts: dict[tuple[int, int], int], left: int,
           right: int, new_id: int) -> list[tuple[list[int], int]]:
    """Merge ``left right`` into ``new_id`` in every word, updating ``counts``; drop single tokens."""
    still_pairs = []
    for word, w in words:
        if left in word and right in word:
            new_word = merge_word(word, left, right, new_id)
            if new_word != word:
                _add_windows(counts, word, -w)
                _add_windows(counts, new_word, w)
                word = new_word
        if len(word) >= 2:  # a single token has no pairs left
            still_pairs.append((word, w))
    return still_pairs


def _add_windows(counts: dict[tuple[int, int], int], word: list[int], weight: int) -> None:
    """Add ``weight`` to ``counts`` for every adjacent window of ``word`` (negative: remove)."""
    for pair in zip(word, word[1:]):
        total = counts.get(pair, 0) + weight
        if total:
            counts[pair] = total
        else:
            del counts[pair]
