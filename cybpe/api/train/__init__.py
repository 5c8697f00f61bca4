"""``train()``: corpus -> chunk counts -> merges -> Tokenizer, one module per mode.

:mod:`.plain` (plain BPE, resuming from a base), :mod:`.superbpe`, :mod:`.parity` and
:mod:`.prune`; :mod:`.options` holds the option objects and the checks every mode shares.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence, Union

from cybpe.api.tokenizer import Tokenizer
from cybpe.api.train.options import Prune, Settings, SuperBPE, all_specials, check_base, check_vocab_size, chosen_mode
from cybpe.api.train.parity import train_parity
from cybpe.api.train.plain import Corpus, train_plain
from cybpe.api.train.superbpe import train_superbpe
from cybpe.errors import InvalidParameterError, ParameterTypeError
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.training.parity import ParallelSet
from cybpe.training.rules import MergeVeto


def train(corpus: Corpus, vocab_size: int, pretokenizer: Union[str, PreTokenizer, None] = None,
          special_tokens: Sequence[str] = (), *, mode: Union[None, SuperBPE, Prune, ParallelSet] = None,
          min_frequency: int = 0, tie_break: str = "ids", workers: Optional[int] = None,
          progress: Optional[bool] = None, errors: str = "strict",
          pretokenizer_params: Optional[dict[str, Any]] = None, max_token_length: Optional[int] = None,
          merge_veto: Union[None, str, MergeVeto] = None, base: Optional[Tokenizer] = None,
          superword_from: Optional[int] = None, superword_pretokenizer: Union[str, PreTokenizer] = "superbpe",
          parity: Optional[ParallelSet] = None, prune_exposure: Optional[int] = None,
          return_counts: bool = False) -> Any:
    """Train a byte-level BPE tokenizer (the arguments in full: docs/guide/training.md).

    ``corpus``: ``str`` texts, paths (:func:`cybpe.files`), or :class:`ChunkCounts` (from
    :func:`cybpe.count`: count once, train many sizes). ``vocab_size`` counts the 256 bytes, the
    merges and the special tokens (ids after the merges). ``pretokenizer``: ``base``'s, else
    ``"cl100k"``. ``min_frequency`` stops early; ``tie_break`` is ``"ids"`` or ``"huggingface"``;
    ``workers`` processes count; ``progress`` None shows bars on a terminal; ``errors`` decodes
    files as ``bytes.decode``. Rules: ``max_token_length`` (bytes, HF's), ``merge_veto``
    (``"scripts"`` or ``veto(left, right) -> bool``). ``base``: continue from a tokenizer (its ids
    kept). ``mode``: :class:`SuperBPE`, :class:`Prune` or :class:`ParallelSet`, or the keywords
    ``superword_from``/``superword_pretokenizer``, ``prune_exposure``, ``parity``.
    ``return_counts=True`` (deprecated: use :func:`cybpe.count`) returns ``(tokenizer, counts)``.
    """
    mode = chosen_mode(mode, superword_from, superword_pretokenizer, parity, prune_exposure)
    if not isinstance(return_counts, bool):
        raise ParameterTypeError(f"train(): return_counts must be True or False, not {type(return_counts).__name__}")
    if return_counts:
        warnings.warn("train(return_counts=True) is deprecated: count with cybpe.count(...) and pass "
                      "the counts as the corpus", DeprecationWarning, stacklevel=2)
    if (return_counts and isinstance(mode, (SuperBPE, ParallelSet))) or (
            base is not None and isinstance(mode, (Prune, ParallelSet))):
        raise InvalidParameterError(f"train(): {type(mode).__name__} cannot be combined with "
                                    f"{'return_counts=' if return_counts else 'base='}")
    settings = Settings.checked(min_frequency=min_frequency, tie_break=tie_break, workers=workers,
                                progress=progress, errors=errors, pretokenizer_params=pretokenizer_params,
                                max_token_length=max_token_length, merge_veto=merge_veto)
    base = check_base(base)
    check_vocab_size(vocab_size, base, all_specials(base, special_tokens))
    if isinstance(mode, SuperBPE):
        return train_superbpe(corpus, vocab_size, pretokenizer, special_tokens, mode, settings, base=base)
    if isinstance(mode, ParallelSet):
        return train_parity(corpus, vocab_size, mode, "cl100k" if pretokenizer is None else pretokenizer, all_specials(None, special_tokens),
                            min_frequency=min_frequency, tie_break=tie_break, workers=workers, errors=errors,
                            pretokenizer_params=pretokenizer_params, max_token_length=max_token_length,
                            veto=settings.veto, veto_name=settings.veto_name)
    tok, counts = train_plain(corpus, vocab_size, pretokenizer, special_tokens, settings, base=base, prune=mode)
    return (tok, counts) if return_counts else tok
