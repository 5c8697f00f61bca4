"""``train(..., mode=Prune(exposure=k))``: pruning by final exposure (:mod:`cybpe.training.prune`).

Plain training's merges are encoded back over the training chunks; the tokens of two or more bytes
that appear fewer than ``k`` times are refused and the same counts are trained again.
"""

from __future__ import annotations

from typing import Any, Sequence

from cybpe.api.train.options import Settings
from cybpe.encode.encoder import RankEncoder
from cybpe.training.prune import RefuseTokens, dead_tokens, final_exposure
from cybpe.training.rules import either
from cybpe.training.trainer import MergeResult, train_merges


def _exposure(chunks: Sequence[bytes], weights: Any, result: MergeResult) -> Any:
    return final_exposure(chunks, weights, len(result.token_bytes),
                          RankEncoder(result.token_bytes, result.merges).encode_piece)


def pruned_merges(chunks: Sequence[bytes], weights: Any, result: MergeResult, n_new: int,
                  settings: Settings, min_exposure: int) -> tuple[MergeResult, dict[str, int]]:
    """The merges trained again without the under-exposed tokens of ``result``, and the
    report's ``pruned`` entry."""
    dead = dead_tokens(_exposure(chunks, weights, result), result.token_bytes, min_exposure)
    if dead:
        result = train_merges(chunks, weights, n_new, min_frequency=settings.min_frequency,
                              tie_break=settings.tie_break, max_token_length=settings.max_token_length,
                              veto=either(settings.veto, RefuseTokens(dead)))
    again = _exposure(chunks, weights, result)
    return result, {"min_exposure": min_exposure, "refused_tokens": len(dead),
                    "dead_after": len(dead_tokens(again, result.token_bytes, min_exposure))}
