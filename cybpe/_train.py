"""``train()``: corpus → chunk counts → merges → Tokenizer."""

from __future__ import annotations

import codecs
import os
import sys
import time
import warnings
from typing import Any, Iterable, Optional, Sequence, Union

from cybpe.training.corpus import count_corpus
from cybpe.training.counts import ChunkCounts
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.training.progress import Progress
from cybpe._tokenizer import Tokenizer
from cybpe.training.trainer import train_merges
from cybpe.formats.vocab import Vocab
from cybpe.pretokenize.specials import checked_special_tokens
from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError, describe

TIE_BREAKS = ("ids", "huggingface")


def _check_int(name: str, value: Any, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "an int or None" if allow_none else "an int"
        raise ParameterTypeError(f"train(): {name} must be {kind}, not {type(value).__name__}")

Corpus = Union[ChunkCounts, Iterable[Union[str, os.PathLike]]]


def train(
    corpus: Corpus,
    vocab_size: int,
    pretokenizer: Union[str, PreTokenizer] = "cl100k",
    special_tokens: Sequence[str] = (),
    *,
    min_frequency: int = 0,
    tie_break: str = "ids",
    workers: Optional[int] = None,
    progress: Optional[bool] = None,
    errors: str = "strict",
    pretokenizer_params: Optional[dict[str, Any]] = None,
) -> Tokenizer:
    """Train a byte-level BPE tokenizer.

    ``corpus``: an iterable of ``str`` texts, of ``pathlib.Path`` files (see :func:`cybpe.files`;
    read streaming as UTF-8, ``errors`` as for ``bytes.decode``), a mix of both, or a
    :class:`ChunkCounts`. ``vocab_size`` counts the 256 byte tokens, the merges and the special
    tokens, which get the ids after the merges. ``min_frequency`` stops early when the best
    pair occurs fewer times (``stop_reason`` says so). ``tie_break="ids"`` (smallest pair of
    ids, as rustbpe) or ``"huggingface"`` (HF BpeTrainer's order). ``workers`` processes count
    the corpus (the result does not depend on it). ``progress``: None shows bars only on a
    terminal; True forces them; False hides them.
    """
    specials = checked_special_tokens(special_tokens)
    _check_int("vocab_size", vocab_size)
    _check_int("min_frequency", min_frequency)
    _check_int("workers", workers, allow_none=True)
    if workers is not None and workers < 1:
        raise InvalidParameterError(f"train(): workers must be >= 1 (or None), not {workers}")
    if not isinstance(tie_break, str) or tie_break not in TIE_BREAKS:
        raise InvalidParameterError(
            f"train(): tie_break must be one of {TIE_BREAKS}, not {describe(tie_break)}")
    if progress is not None and not isinstance(progress, bool):
        raise ParameterTypeError(f"train(): progress must be True, False or None, not {describe(progress)}")
    if not isinstance(errors, str):
        raise ParameterTypeError(f"train(): errors must be a str, not {type(errors).__name__}")
    try:
        codecs.lookup_error(errors)
    except (LookupError, UnicodeError):
        raise InvalidParameterError(f"train(): errors={describe(errors)} is not an error handler") from None
    if pretokenizer_params is not None and not isinstance(pretokenizer_params, dict):
        raise ParameterTypeError(
            f"train(): pretokenizer_params must be a dict, not {type(pretokenizer_params).__name__}")
    if vocab_size < 256 + len(specials):
        raise TrainingError(
            f"vocab_size must be at least 256 + {len(specials)} special tokens = "
            f"{256 + len(specials)}, got {vocab_size!r}"
        )
    if min_frequency < 0:
        raise InvalidParameterError("min_frequency must be ≥ 0")
    show = sys.stderr.isatty() if progress is None else bool(progress)
    started = time.perf_counter()

    if isinstance(corpus, ChunkCounts):
        counts = corpus
        if pretokenizer_params or (isinstance(pretokenizer, str) and pretokenizer != "cl100k"
                                   and pretokenizer != counts.pretokenizer.name):
            warnings.warn("train(): corpus is ChunkCounts; its own pre-tokenizer is used", stacklevel=2)
        missing = set(specials) - set(counts.special_tokens)
        if missing and counts.special_tokens:
            raise InvalidParameterError(
                f"the chunk counts were made with other special tokens (missing {sorted(missing)})"
            )
    else:
        counts = ChunkCounts(pretokenizer, specials, **(pretokenizer_params or {}))
        if isinstance(corpus, (str, bytes)) or not hasattr(corpus, "__iter__"):
            raise ParameterTypeError(
                "corpus must be an iterable of texts or paths, or ChunkCounts, not a single "
                f"{type(corpus).__name__} (wrap one text in a list; cybpe.files(...) makes paths)"
            )
        with Progress(show, "counting", unit="B") as bar:
            count_corpus(counts, corpus, workers=workers, errors=errors,
                         progress=lambda n: bar.advance(n))
    counting_seconds = time.perf_counter() - started
    if len(counts) == 0:
        raise TrainingError("the corpus is empty: the pre-tokenizer produced no chunks")

    chunks, weights = counts.sorted_arrays()
    n_new = vocab_size - 256 - len(specials)
    merge_started = time.perf_counter()
    with Progress(show, "merging", unit="merges", total=n_new) as bar:
        result = train_merges(chunks, weights, n_new, min_frequency=min_frequency,
                              tie_break=tie_break, progress=lambda done, total: bar.update(done))
    merging_seconds = time.perf_counter() - merge_started

    tokens = list(result.token_bytes)
    first_special = len(tokens)
    vocab = Vocab(
        tokens=tokens,
        merges=list(result.merges),
        special_tokens={s: first_special + i for i, s in enumerate(specials)},
        ignore_merges=True,
        encode_by_rank=True,
    )
    report = {
        "stop_reason": result.stop_reason,
        "requested_vocab_size": vocab_size,
        "n_merges": len(result.merges),
        "unique_chunks": len(counts),
        "chunk_occurrences": counts.total,
        "tie_break": tie_break,
        "min_frequency": min_frequency,
        "counting_seconds": round(counting_seconds, 3),
        "merging_seconds": round(merging_seconds, 3),
        "merge_counts": [int(c) for c in result.counts],
    }
    tok = Tokenizer(vocab, counts.pretokenizer, metadata={"training": report})
    return tok
