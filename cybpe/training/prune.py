"""Pruning by final exposure: drop the tokens the trained tokenizer (almost) never emits, refill.

BPE keeps every intermediate token: ``ati`` may exist only on the way to ``ation`` and never
appear in the final encoding of the training corpus. Here a token's *final exposure* is the number
of times it appears in the final segmentation of the training chunks (each unique chunk encoded
once with the trained merges, times its count). Tokens of at least two bytes with exposure below
``min_exposure`` are dead.

Removing a dead token from a rank list would disable every later merge that uses it (their
tokens would become unreachable), so the budget is reallocated by training again on the same
counts with the dead tokens refused as merge results (a merge veto: the pair that would spell a
dead token is never merged, and the next best pair is merged instead). The result is an ordinary
merge list with the same vocabulary size; vetoes only remove candidates, so the rank encoder and
the tiktoken/HF exports stay exact. A longer token that used a dead one as a part can still form
through another split. One round is made: the retrained vocabulary can have dead tokens of its
own (the training report counts them).

Thread safety: :class:`RefuseTokens` is immutable (safe to share); the functions keep no state.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence


def final_exposure(chunks: Sequence[bytes], weights: Iterable[int], n_tokens: int,
                   encode_piece: Callable[[bytes], Sequence[int]]) -> list[int]:
    """Per token id (``n_tokens`` of them): how often it appears in the encodings of ``chunks``
    by ``encode_piece`` (the trained merges' piece encoder), times ``weights``."""
    exposure = [0] * n_tokens
    for chunk, w in zip(chunks, weights):
        w = int(w)
        for t in encode_piece(chunk):
            exposure[t] += w
    return exposure


def dead_tokens(exposure: Sequence[int], tokens: Sequence[bytes], min_exposure: int) -> frozenset[bytes]:
    """The tokens of two or more bytes whose exposure is below ``min_exposure``."""
    return frozenset(t for t, n in zip(tokens, exposure) if len(t) > 1 and n < min_exposure)


class RefuseTokens:
    """A merge veto refusing every merge that would spell one of ``tokens`` (bytes)."""

    __slots__ = ("tokens",)

    def __init__(self, tokens: Iterable[bytes]) -> None:
        self.tokens = frozenset(tokens)

    def __call__(self, left: bytes, right: bytes) -> bool:
        return left + right in self.tokens

    def __repr__(self) -> str:
        return f"RefuseTokens({len(self.tokens)} tokens)"
