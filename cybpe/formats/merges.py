"""Merge lists derived from a rank-only vocabulary (token bytes in id order).

* :func:`canonical_merges`: one merge per multi-byte token, the split whose halves became tokens
  earliest. The GPT-2 file format needs a merge list; this is the smallest one that still builds
  every token.
* :func:`all_splits_merges`: every split of every token into two tokens. With Hugging Face's
  ``ignore_merges: true`` this reproduces tiktoken's rank-based BPE exactly (it is how Llama-3's
  ``tokenizer.json`` was made), even for tokens that no canonical merge order reaches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from cybpe.errors import FormatError

if TYPE_CHECKING:
    from cybpe.formats.vocab import Vocab
    from cybpe.formats.vocab_checks import TokenIndex


def canonical_merges(tokens: Sequence[bytes]) -> list[tuple[int, int]]:
    """For each token of two or more bytes, in id order, the split ``(a, b)`` into two tokens
    of lower id than the token whose ``max(a, b)`` is smallest (ties: leftmost split).

    Raises :class:`FormatError` naming the first token that has no such split.
    """
    ids = {tok: i for i, tok in enumerate(tokens)}
    merges: list[tuple[int, int]] = []
    get = ids.get
    for t, tok in enumerate(tokens):
        n = len(tok)
        if n < 2:
            continue
        best: tuple[int, int] | None = None
        best_key = t  # a usable split has max(a, b) < t
        for k in range(1, n):
            a = get(tok[:k])
            if a is None or a >= best_key:
                continue
            b = get(tok[k:])
            if b is None or b >= best_key:
                continue
            best_key = a if a > b else b
            best = (a, b)
        if best is None:
            raise FormatError(
                f"token id {t} ({tok!r}) cannot be split into two tokens of lower id, "
                "so no merge list builds it"
            )
        merges.append(best)
    return merges


def all_splits_merges(tokens: Sequence[bytes]) -> list[tuple[int, int]]:
    """Every ``(id(T[:k]), id(T[k:]))`` where both halves are tokens (of any id), ordered by the
    id of ``T``, then by the pair ``(left id, right id)``.

    That order is the one in Llama-3's ``tokenizer.json``: its 280,147 merges are exactly this
    list (checked in the tests), so a Llama-3 vocabulary exported here gets its own merges back.
    """
    ids = {tok: i for i, tok in enumerate(tokens)}
    get = ids.get
    merges: list[tuple[int, int]] = []
    for tok in tokens:
        splits = []
        for k in range(1, len(tok)):
            a = get(tok[:k])
            if a is not None:
                b = get(tok[k:])
                if b is not None:
                    splits.append((a, b))
        if len(splits) > 1:
            splits.sort()
        merges.extend(splits)
    return merges


def rank_vocab_if_all_splits(vocab: Vocab, index: Optional[TokenIndex] = None) -> Vocab:
    """A merge list that holds every split of every token in rank order (what ``to_hf`` writes
    for a rank vocabulary) encodes exactly as the ranks do: give back the rank-only vocabulary,
    which also saves as ``.tiktoken``. Any other vocabulary is returned unchanged. ``index``: the
    compiled index of ``vocab.tokens`` when the caller has built it already (a loader)."""
    from cybpe.formats.vocab import Vocab

    merges = vocab.merges
    if merges is None or vocab.encode_by_rank or len(merges) <= len(vocab.tokens) - 256:
        return vocab
    if not _is_all_splits(vocab.tokens, merges, index):
        return vocab
    return Vocab(list(vocab.tokens), None, dict(vocab.special_tokens), vocab.ignore_merges, False)


def _is_all_splits(tokens: Sequence[bytes], merges: Sequence[tuple[int, int]],
                   index: Optional[TokenIndex] = None) -> bool:
    """Whether ``merges`` is exactly :func:`all_splits_merges` of ``tokens`` (compiled, in
    cybpe/formats/vocab_checks.pyx: a Python list and a comparison were an order of magnitude
    slower on Llama 3's 280,147 merges)."""
    from cybpe.formats.vocab_checks import TokenIndex

    if index is None:
        index = TokenIndex.of(list(tokens))
    return index is not None and bool(index.is_all_splits(merges))


def resolve_merge(ids: dict[str, int], left: str, right: str, where: str, vocab_label: str) -> tuple[int, int]:
    """The ids of one merge line's two tokens; FormatError (prefixed by ``where``) when either
    is missing or when their concatenation is not a token of ``vocab_label``."""
    a, b = ids.get(left), ids.get(right)
    if a is None or b is None:
        raise FormatError(f"{where}: {left if a is None else right!r} is not in {vocab_label}")
    if left + right not in ids:
        raise FormatError(f"{where}: merge makes {left + right!r}, which is not in {vocab_label}")
    return a, b
