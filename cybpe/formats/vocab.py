"""The in-memory vocabulary that every format loads into and saves from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from cybpe.errors import FormatError
from cybpe.formats.vocab_checks import TokenIndex, all_tuples

#: The largest token id: ids are 32-bit unsigned in encoded arrays, and the top value is kept
#: free (it marks "no token" in the compiled tables).
MAX_ID = 2**32 - 2

#: Version of the packed pickle state (:meth:`Vocab.__getstate__`).
PACKED_STATE = 1


@dataclass
class Vocab:
    """Ordinary tokens, optional merges and special tokens: what every file format holds.

    * ``tokens[i]`` is the byte string of ordinary token id ``i`` (ids ``0..len(tokens)-1``).
      It is a bijection: no two ids share bytes; every single byte is a token.
    * ``merges`` is ``None`` for rank-only vocabularies (``.tiktoken``: the id is the rank and the
      encoder merges through every split of every token), or an ordered list of ``(left_id,
      right_id)`` pairs (rank = position) whose concatenated bytes are a token (trained here,
      GPT-2 files, HF ``tokenizer.json``).
    * ``ignore_merges``: look the whole piece up before merging (tiktoken always does; HF does
      when the flag is set in ``tokenizer.json``).
    * ``encode_by_rank``: encode as tiktoken does, merging any adjacent pair whose bytes form a
      token (rank = id), even when ``merges`` lists one split per token. Trained tokenizers set
      it, so that their ids equal tiktoken's and HF's for the exported files (a merge list alone
      would not merge ``a + bc`` into ``abc`` when ``abc`` was learned as ``ab + c``).
    * ``special_tokens`` maps each special string to its id; special ids never collide with
      ordinary ids.
    * Gaps and aliases (what tiktoken's vocabularies have): in a rank-only vocabulary
      (``merges is None``) ``tokens[i]`` may be ``None``, an id that is no ordinary token
      (p50k_base's ranks skip 50256, where ``<|endoftext|>`` sits); a special token may take such
      an id, and two special strings may share one id (o200k_harmony gives 200018 to
      ``<|endofprompt|>`` and ``<|reserved_200018|>``): both encode to it, and it decodes to the
      first of them in ``special_tokens``' order (what tiktoken does for o200k_harmony). The
      last ordinary id is always a token. Formats that cannot hold gaps or aliases refuse them
      on export (:meth:`check_exportable`).
    """

    tokens: list[bytes]
    """The bytes of each ordinary token, by id (the first 256 need not be the single bytes)."""
    merges: Optional[list[tuple[int, int]]] = None
    """The merge list as pairs of ids, in rank order; ``None`` for a rank-only vocabulary."""
    special_tokens: dict[str, int] = field(default_factory=dict)
    """Each special string's id."""
    ignore_merges: bool = True
    """HF's ``ignore_merges``: a piece that is a whole token is that token, merges or not."""
    encode_by_rank: bool = False
    """Encode by rank (tiktoken's rule) even though a merge list is given."""

    def validate(self, source: str = "vocabulary") -> None:
        """Raise :class:`FormatError` (naming ``source``) unless the invariants above hold."""
        if not isinstance(self.tokens, (list, tuple)):
            raise FormatError(f"{source}: tokens must be a list of bytes, not {type(self.tokens).__name__}")
        if not isinstance(self.special_tokens, dict):
            raise FormatError(
                f"{source}: special_tokens must be a dict of str to id, not "
                f"{type(self.special_tokens).__name__}")
        for flag in ("ignore_merges", "encode_by_rank"):
            if not isinstance(getattr(self, flag), bool):
                raise FormatError(f"{source}: {flag} must be True or False")
        # What an earlier passing call checked, kept as copies of the lists (references only):
        # a vocabulary checked by its loader is not hashed again by Tokenizer() (see the note
        # at the end of this file). Anything changed since fails the equality
        # and is checked again; the special tokens and flags are always checked (they are few).
        checked = self.__dict__.get("_checked")
        tokens_checked = (checked is not None and type(self.tokens) is list
                          and checked[0] == self.tokens)
        merges_checked = (tokens_checked and checked[1] is not None
                          and type(self.merges) is list and checked[1] == self.merges)
        # The compiled index checks the tokens (and below, the merges) in one pass; the Python
        # loops run only when it declines, to name what is wrong (cybpe/formats/vocab_checks.pyx).
        index = None if tokens_checked else TokenIndex.of(list(self.tokens))
        seen: Optional[dict[bytes, int]] = None
        if tokens_checked:
            missing = []
        elif index is None:
            seen = {}
            for i, tok in enumerate(self.tokens):
                if tok is None:  # a gap (checked below: rank-only vocabularies only)
                    continue
                if not isinstance(tok, bytes) or not tok:
                    raise FormatError(f"{source}: token id {i} is empty or not bytes")
                if tok in seen:
                    raise FormatError(
                        f"{source}: token ids {seen[tok]} and {i} have the same bytes {tok!r}"
                    )
                seen[tok] = i
            missing = [b for b in range(256) if bytes([b]) not in seen]
        else:
            missing = index.missing_bytes()
        if missing:
            raise FormatError(
                f"{source}: {len(missing)} single bytes are not tokens (first: {missing[0]})"
            )
        n = len(self.tokens)
        gaps = self.gaps if index is None else frozenset()
        if gaps:
            if self.merges is not None:
                raise FormatError(f"{source}: token id {min(gaps)} is None (a gap): only a rank-only "
                                  "vocabulary (merges None) may skip ids")
            if self.tokens[-1] is None:
                raise FormatError(f"{source}: the last ordinary id ({n - 1}) is a gap (None)")
        for s, i in self.special_tokens.items():
            if not isinstance(s, str) or not s:
                raise FormatError(f"{source}: special token {s!r} is not a non-empty string")
            try:
                str.encode(s, "utf-8")
            except UnicodeEncodeError:
                raise FormatError(f"{source}: special token {s!r} has a lone surrogate") from None
            if not isinstance(i, int) or isinstance(i, bool):
                raise FormatError(f"{source}: special token {s!r} has id {i!r}, not an integer")
            if i < 0 or (i < n and i not in gaps):
                raise FormatError(
                    f"{source}: special token {s!r} has id {i}, which collides with an ordinary id"
                )
            if i > MAX_ID:
                raise FormatError(
                    f"{source}: special token {s!r} has id {i}; ids are 32-bit (at most {MAX_ID})"
                )
        if self.merges is not None and not merges_checked:
            self._check_merges(source, index, seen)
        if merges_checked:
            return
        # (merges are remembered only as a list of tuples, immutable, as every loader makes them)
        self.__dict__["_checked"] = (
            checked[0] if tokens_checked else list(self.tokens),
            list(self.merges) if type(self.merges) is list and all_tuples(self.merges) else None)

    def __getstate__(self) -> dict[str, Any]:
        """The fields, with the tokens as one byte string and their lengths, and the merges as
        one array (:data:`PACKED_STATE`); what validate remembers is not pickled (it is
        checked again).

        Why packed: pickles made by pure-Python picklers (dill, as ``datasets`` uses to
        fingerprint a ``map`` function that holds a tokenizer) pay one Python call per object;
        a list of 100,000 token byte strings took 0.2 s to fingerprint, one byte string takes
        nothing."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_checked", "_gap_cache")}
        tokens = state.pop("tokens")
        merges = state.pop("merges")
        state["packed"] = PACKED_STATE
        state["token_bytes"] = b"".join(t for t in tokens if t is not None)
        state["token_lengths"] = np.array([-1 if t is None else len(t) for t in tokens], "<i4").tobytes()
        state["merge_ids"] = None if merges is None else np.array(merges, "<u4").reshape(-1).tobytes()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A packed state (:meth:`__getstate__`), or the plain field dict of older pickles."""
        state = dict(state)
        if state.pop("packed", None) is not None:
            blob = state.pop("token_bytes")
            lengths = np.frombuffer(state.pop("token_lengths"), "<i4")
            ends = np.cumsum(np.maximum(lengths, 0)).tolist()
            tokens: list = [None if n < 0 else blob[e - n:e] for n, e in zip(lengths.tolist(), ends)]
            merge_ids = state.pop("merge_ids")
            flat = None if merge_ids is None else np.frombuffer(merge_ids, "<u4").tolist()
            state["tokens"] = tokens
            state["merges"] = None if flat is None else list(zip(flat[0::2], flat[1::2]))
        self.__dict__.update(state)

    def _check_merges(self, source: str, index: Optional[TokenIndex],
                      seen: Optional[dict[bytes, int]]) -> None:
        n = len(self.tokens)
        if not isinstance(self.merges, (list, tuple)):
            raise FormatError(f"{source}: merges must be None or a list of (left, right) id pairs")
        if index is None and seen is None:
            index = TokenIndex.of(list(self.tokens))
        if index is not None and index.merges_valid(self.merges):
            return
        if seen is None:
            seen = {tok: i for i, tok in enumerate(self.tokens)}
        k = -1
        try:  # (no per-pair type checks: a bad pair fails the unpacking or the indexing)
            for k, (a, b) in enumerate(self.merges):
                if not (0 <= a < n and 0 <= b < n):
                    raise FormatError(f"{source}: merge {k} ({a}, {b}) names an unknown id")
                if self.tokens[a] + self.tokens[b] not in seen:
                    raise FormatError(
                        f"{source}: merge {k} ({a}, {b}) produces bytes that are not a token"
                    )
        except (TypeError, ValueError) as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(
                f"{source}: merge {k} is not a (left id, right id) pair of integers"
            ) from None

    @property
    def gaps(self) -> frozenset[int]:
        """The ordinary ids that are no token (``tokens[i] is None``); usually empty."""
        found = self.__dict__.get("_gap_cache")
        if found is None or found[0] is not self.tokens or found[1] != len(self.tokens):
            tokens = self.tokens
            ids = frozenset(i for i, t in enumerate(tokens) if t is None) if None in tokens else frozenset()
            found = self.__dict__["_gap_cache"] = (tokens, len(tokens), ids)
        return found[2]

    @property
    def aliased_ids(self) -> frozenset[int]:
        """The ids that two or more special strings share; usually empty."""
        ids = list(self.special_tokens.values())
        if len(set(ids)) == len(ids):
            return frozenset()
        seen: set[int] = set()
        shared: set[int] = set()
        for i in ids:
            (shared if i in seen else seen).add(i)
        return frozenset(shared)

    def special_decoder(self) -> dict[int, str]:
        """id -> the special string it decodes to: for an id shared by several strings, the
        first of them in ``special_tokens``' order."""
        out: dict[int, str] = {}
        for s, i in self.special_tokens.items():
            out.setdefault(i, s)
        return out

    def check_exportable(self, target: str, *, gaps: bool = False, aliases: bool = False) -> None:
        """:class:`~cybpe.errors.ExportError` unless ``target`` can hold this vocabulary:
        ``gaps=True`` / ``aliases=True`` say that the format holds skipped ids / special
        tokens sharing an id."""
        from cybpe.errors import ExportError

        if not gaps and self.gaps:
            raise ExportError(
                f"{target} cannot hold a vocabulary whose ordinary ids skip {len(self.gaps)} id(s) "
                f"(first: {min(self.gaps)}): its ids would shift. Save it as .tiktoken "
                "(to_tiktoken), which keeps the ranks, or pickle the Tokenizer")
        if not aliases and self.aliased_ids:
            shared = min(self.aliased_ids)
            names = [s for s, i in self.special_tokens.items() if i == shared]
            raise ExportError(
                f"{target} cannot give one id to several special tokens ({shared}: "
                f"{', '.join(map(repr, names))}); remove all but one of them first")

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (ordinary or special)."""
        top = len(self.tokens) - 1
        if self.special_tokens:
            top = max(top, max(self.special_tokens.values()))
        return top + 1



# Why validate() remembers what passed
# ------------------------------------
# Every load validates twice: in the loader (which names the file, and for .tiktoken the line,
# of a bad token) and in Tokenizer() (which must check any Vocab, a user's too). A passing call
# keeps copies of the token and merge lists (references only), and the next call compares them
# with the current lists, an identity test per item, before deciding what to check again, so the
# second call hashes nothing (the timings: docs/history.md, "Loading vocabularies"). A list
# changed in place fails the comparison and is checked in
# full (tests/formats/test_vocab_validate_once.py).
