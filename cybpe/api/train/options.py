"""The option objects of :func:`cybpe.train` and the settings every mode shares, checked once.

A training mode is one object passed as ``train(..., mode=...)``: :class:`SuperBPE`,
:class:`Prune`, or :class:`~cybpe.ParallelSet` (parity-aware BPE). One object per call, so the
modes exclude each other by construction; each is immutable and safe to share between threads.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence, Union

from cybpe.api.tokenizer import Tokenizer
from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError, check_error_handler, describe
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.specials import checked_special_tokens
from cybpe.tie_breaks import TIE_BREAKS
from cybpe.training.parity import ParallelSet
from cybpe.training.rules import MergeVeto, resolve_veto


def check_int(name: str, value: Any, *, allow_none: bool = False) -> None:
    """ParameterTypeError unless ``value`` is an int (a bool is not), or None when allowed."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "an int or None" if allow_none else "an int"
        raise ParameterTypeError(f"train(): {name} must be {kind}, not {type(value).__name__}")


class SuperBPE:
    """SuperBPE (arXiv 2503.13423), for ``train(..., mode=SuperBPE(from_=t))``.

    Training runs in two stages on the same corpus. Stage 1 is ordinary training up to ``t``
    ordinary tokens (bytes and merges); stage 2 re-counts the corpus with ``pretokenizer``
    (``"superbpe"``: only numbers split, so merges may cross spaces and punctuation), replays
    stage 1's merges and continues to ``vocab_size`` under the paper's stage-2 vetoes (no token
    holds ``": "`` or more than four words) and ``merge_veto``. The tokenizer encodes with the
    stage-2 pre-tokenizer; ``metadata["training"]["stages"]`` records both stages. The corpus
    must be iterable twice (a list, or paths). Immutable; safe to share between threads.
    """

    __slots__ = ("_from", "_pretokenizer")

    def __init__(self, from_: int, *, pretokenizer: Union[str, PreTokenizer] = "superbpe") -> None:
        check_int("SuperBPE(from_)", from_)
        if from_ < 256:
            raise InvalidParameterError(f"SuperBPE: from_ (superword_from) must be >= 256 (the bytes), not {from_}")
        self._from, self._pretokenizer = from_, pretokenizer

    @property
    def from_(self) -> int:
        """Stage 1's number of ordinary tokens (bytes and merges)."""
        return self._from

    @property
    def pretokenizer(self) -> Union[str, PreTokenizer]:
        """Stage 2's pre-tokenizer."""
        return self._pretokenizer

    def __repr__(self) -> str:
        return f"SuperBPE(from_={self._from}, pretokenizer={self._pretokenizer!r})"


class Prune:
    """Pruning by final exposure, for ``train(..., mode=Prune(exposure=k))``.

    Training runs once, encodes the training chunks with the result, and runs again on the same
    counts refusing every token of two or more bytes that appeared fewer than ``k`` times in
    that encoding (see :mod:`cybpe.training.prune`), so their slots go to other merges.
    Immutable; safe to share between threads.
    """

    __slots__ = ("_exposure",)

    def __init__(self, exposure: int) -> None:
        check_int("Prune(exposure)", exposure)
        if exposure < 1:
            raise InvalidParameterError(f"Prune: exposure must be >= 1, not {exposure}")
        self._exposure = exposure

    @property
    def exposure(self) -> int:
        """The fewest times a kept token of two or more bytes appears in the final encoding."""
        return self._exposure

    def __repr__(self) -> str:
        return f"Prune(exposure={self._exposure})"


Mode = Union[None, SuperBPE, Prune, ParallelSet]


def chosen_mode(mode: Any, superword_from: Optional[int], superword_pretokenizer: Union[str, PreTokenizer],
                parity: Optional[ParallelSet], prune_exposure: Optional[int]) -> Mode:
    """The one mode of a call: ``mode=``, or the keyword arguments that name a mode."""
    check_int("superword_from", superword_from, allow_none=True)
    check_int("prune_exposure", prune_exposure, allow_none=True)
    given = [m for m in (mode,
                         None if superword_from is None else SuperBPE(superword_from, pretokenizer=superword_pretokenizer),
                         parity,
                         None if prune_exposure is None else Prune(prune_exposure)) if m is not None]
    if len(given) > 1:
        raise InvalidParameterError(
            "train(): the modes exclude each other: one of mode=, superword_from=, parity=, prune_exposure=")
    found = given[0] if given else None
    if parity is not None and not isinstance(parity, ParallelSet):
        raise ParameterTypeError(f"train(): parity must be a ParallelSet, not {type(parity).__name__}")
    if found is not None and not isinstance(found, (SuperBPE, Prune, ParallelSet)):
        raise ParameterTypeError(f"train(): mode must be a SuperBPE, Prune or ParallelSet, not {describe(found)}")
    return found


@dataclass(frozen=True)
class Settings:
    """The arguments every mode shares, checked (:meth:`checked`)."""

    min_frequency: int
    tie_break: str
    workers: Optional[int]
    show: bool  # progress bars
    progress: Optional[bool]
    errors: str
    pretokenizer_params: Optional[dict[str, Any]]
    max_token_length: Optional[int]
    merge_veto: Union[None, str, MergeVeto]
    veto: Optional[MergeVeto]
    veto_name: Optional[str]

    @classmethod
    def checked(cls, *, min_frequency: Any, tie_break: Any, workers: Any, progress: Any, errors: Any,
                pretokenizer_params: Any, max_token_length: Any, merge_veto: Any) -> "Settings":
        check_int("max_token_length", max_token_length, allow_none=True)
        check_int("min_frequency", min_frequency)
        check_int("workers", workers, allow_none=True)
        if workers is not None and workers < 1:
            raise InvalidParameterError(f"train(): workers must be >= 1 (or None), not {workers}")
        if not isinstance(tie_break, str) or tie_break not in TIE_BREAKS:
            raise InvalidParameterError(
                f"train(): tie_break must be one of {TIE_BREAKS}, not {describe(tie_break)}")
        if progress is not None and not isinstance(progress, bool):
            raise ParameterTypeError(f"train(): progress must be True, False or None, not {describe(progress)}")
        check_error_handler(errors, "train(): ")
        if pretokenizer_params is not None and not isinstance(pretokenizer_params, dict):
            raise ParameterTypeError(
                f"train(): pretokenizer_params must be a dict, not {type(pretokenizer_params).__name__}")
        if min_frequency < 0:
            raise InvalidParameterError("min_frequency must be ≥ 0")
        veto, veto_name = resolve_veto(merge_veto)
        show = sys.stderr.isatty() if progress is None else bool(progress)
        return cls(min_frequency, tie_break, workers, show, progress, errors, pretokenizer_params,
                   max_token_length, merge_veto, veto, veto_name)

    def but(self, **changes: Any) -> "Settings":
        """A copy with ``changes``."""
        return replace(self, **changes)


def check_base(base: Any) -> Optional[Tokenizer]:
    """``base``: None, or a Tokenizer without a normalizer."""
    if base is not None and not isinstance(base, Tokenizer):
        raise InvalidParameterError(f"base must be a Tokenizer, not {type(base).__name__}")
    if base is not None and base.normalizer is not None:
        raise InvalidParameterError("base: tokenizers with a normalizer cannot be extended yet")
    return base


def all_specials(base: Optional[Tokenizer], special_tokens: Sequence[str]) -> list[str]:
    """The base's special tokens in id order, then ``special_tokens`` (checked), each once."""
    base_specials = [] if base is None else sorted(base.special_tokens, key=base.special_tokens.get)
    return list(dict.fromkeys([*base_specials, *checked_special_tokens(special_tokens)]))


def check_vocab_size(vocab_size: Any, base: Optional[Tokenizer], specials: Sequence[str]) -> None:
    """TrainingError unless ``vocab_size`` holds the bytes (or the base's tokens) and ``specials``."""
    check_int("vocab_size", vocab_size)
    n_kept = 256 if base is None else len(base.vocab.tokens)
    if not isinstance(vocab_size, int) or vocab_size < n_kept + len(specials):
        kept = "256 bytes" if base is None else f"the base's {n_kept} tokens"
        raise TrainingError(
            f"vocab_size must be at least {kept} + {len(specials)} special tokens = "
            f"{n_kept + len(specials)}, got {vocab_size!r}"
        )
