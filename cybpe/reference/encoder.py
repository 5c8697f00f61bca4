"""Pure-Python reference for :mod:`cybpe.encode.encoder`: the textbook BPE of one piece.

Slow and obviously correct; the tests compare the compiled encoder against it.

* :func:`reference_encode_piece` merges by *bytes* (``ranks[A + B]``), as tiktoken does: the rank
  of a token is its id.
* :func:`reference_encode_piece_with_pairs` merges by *id pairs* through a table
  ``(left id, right id) -> (rank, new id)``, built by :func:`all_splits_table` (rank-only
  vocabularies) or :func:`merges_table` (an explicit merges list).
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

NO_RANK = float("inf")

PairTable = Mapping[tuple[int, int], tuple[int, int]]


def reference_encode_piece(
    piece: bytes, ranks: Mapping[bytes, int], *, whole_piece_lookup: bool = True
) -> list[int]:
    """BPE of ``piece`` with tiktoken's rule: merge the adjacent parts whose concatenation has
    the lowest rank (leftmost on ties) until no concatenation is a token."""
    if whole_piece_lookup and piece in ranks:
        return [ranks[piece]]
    parts = [piece[i : i + 1] for i in range(len(piece))]

    def rank_at(i: int) -> float:  # rank of merging parts i and i+1
        return ranks.get(parts[i] + parts[i + 1], NO_RANK)

    pair_ranks = [rank_at(i) for i in range(len(parts) - 1)]
    while pair_ranks:
        best = min(pair_ranks)
        if best == NO_RANK:
            break
        i = pair_ranks.index(best)  # the first, i.e. leftmost, of the lowest
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
        del pair_ranks[i]
        if i < len(parts) - 1:
            pair_ranks[i] = rank_at(i)
        if i > 0:
            pair_ranks[i - 1] = rank_at(i - 1)
    return [ranks[part] for part in parts]


def reference_encode_piece_with_pairs(
    piece: bytes,
    token_ids: Mapping[bytes, int],
    pairs: PairTable,
    *,
    whole_piece_lookup: bool = True,
) -> list[int]:
    """BPE of ``piece`` over an id-pair table: merge the adjacent pair with the lowest rank
    (leftmost on ties) into its new id until no adjacent pair is in the table."""
    if whole_piece_lookup and piece in token_ids:
        return [token_ids[piece]]
    ids = [token_ids[piece[i : i + 1]] for i in range(len(piece))]
    while len(ids) > 1:
        candidates = [
            (pairs[ids[i], ids[i + 1]][0], i)
            for i in range(len(ids) - 1)
            if (ids[i], ids[i + 1]) in pairs
        ]
        if not candidates:
            break
        _, i = min(candidates)  # lowest rank, then lowest position
        ids[i : i + 2] = [pairs[ids[i], ids[i + 1]][1]]
    return ids


def all_splits_table(tokens: Sequence[bytes]) -> dict[tuple[int, int], tuple[int, int]]:
    """For every token T and every split T = A + B where A and B are tokens:
    (id A, id B) -> (id T, id T). With it, id-pair BPE equals tiktoken's bytes-keyed BPE."""
    token_ids = {token: i for i, token in enumerate(tokens)}
    table = {}
    for i, token in enumerate(tokens):
        for k in range(1, len(token)):
            left, right = token_ids.get(token[:k]), token_ids.get(token[k:])
            if left is not None and right is not None:
                table[left, right] = (i, i)
    return table


def merges_table(
    tokens: Sequence[bytes], merges: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], tuple[int, int]]:
    """Merge k = (a, b) -> (k, id of tokens[a] + tokens[b]); a repeated pair keeps its first k."""
    token_ids = {token: i for i, token in enumerate(tokens)}
    table: dict[tuple[int, int], tuple[int, int]] = {}
    for k, (a, b) in enumerate(merges):
        table.setdefault((a, b), (k, token_ids[tokens[a] + tokens[b]]))
    return table


def token_ids_of(tokens: Sequence[bytes]) -> dict[bytes, int]:
    """bytes -> id for a token list (the ``ranks`` of a rank-only vocabulary)."""
    return {token: i for i, token in enumerate(tokens)}


def reference_encode(
    pieces: Sequence[bytes],
    tokens: Sequence[bytes],
    merges: Optional[Sequence[tuple[int, int]]] = None,
    *,
    whole_piece_lookup: bool = True,
) -> list[int]:
    """All pieces, in order, with the semantics of ``RankEncoder(tokens, merges, ...)``."""
    token_ids = token_ids_of(tokens)
    out: list[int] = []
    if merges is None:
        for piece in pieces:
            out += reference_encode_piece(piece, token_ids, whole_piece_lookup=whole_piece_lookup)
    else:
        table = merges_table(tokens, merges)
        for piece in pieces:
            out += reference_encode_piece_with_pairs(
                piece, token_ids, table, whole_piece_lookup=whole_piece_lookup
            )
    return out
