"""``train()``: corpus → chunk counts → merges → Tokenizer."""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any, Iterable, Optional, Sequence, Union

from cybpe.training.corpus import count_corpus
from cybpe.training.shards import Shard
from cybpe.training.counts import ChunkCounts
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.training.progress import Progress
from cybpe._tokenizer import Tokenizer
from cybpe.training.trainer import train_merges
from cybpe.formats.vocab import Vocab
from cybpe.errors import InvalidParameterError, TrainingError

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
    return_counts: bool = False,
) -> Any:
    """Train a byte-level BPE tokenizer.

    ``corpus``: an iterable of ``str`` texts, of ``pathlib.Path`` files (see :func:`cybpe.files`;
    read streaming as UTF-8, ``errors`` as for ``bytes.decode``), a mix of both, or a
    :class:`ChunkCounts`. ``vocab_size`` counts the 256 byte tokens, the merges and the special
    tokens, which get the ids after the merges. ``min_frequency`` stops early when the best
    pair occurs fewer times (``stop_reason`` says so). ``tie_break="ids"`` (smallest pair of
    ids, as rustbpe) or ``"huggingface"`` (HF BpeTrainer's order). ``workers`` processes count
    the corpus (the result does not depend on it). ``progress``: None shows bars only on a
    terminal; True forces them; False hides them. ``return_counts=True`` returns
    ``(tokenizer, chunk_counts)``, so one count can train several vocabulary sizes (or use
    :func:`cybpe.count` first and pass its result as ``corpus``).

    Approximate counts (from a memory cap) train as they are; the report in
    ``tokenizer.metadata["training"]`` records ``exact_counts`` and ``max_undercount``.
    """
    specials = list(dict.fromkeys(special_tokens))
    if any(not isinstance(s, str) or not s for s in specials):
        raise InvalidParameterError("special tokens must be non-empty strings")
    if not isinstance(vocab_size, int) or vocab_size < 256 + len(specials):
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
        if isinstance(corpus, (str, bytes)):
            raise InvalidParameterError(
                "corpus must be an iterable of texts or paths, or ChunkCounts, not a single "
                f"{type(corpus).__name__} (wrap one text in a list; cybpe.files(...) makes paths)"
            )
        if isinstance(corpus, (os.PathLike, Shard)):
            corpus = [corpus]  # one file or folder
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
        "exact_counts": counts.exact,
        "max_undercount": counts.max_undercount,
        "tie_break": tie_break,
        "min_frequency": min_frequency,
        "counting_seconds": round(counting_seconds, 3),
        "merging_seconds": round(merging_seconds, 3),
        "merge_counts": [int(c) for c in result.counts],
    }
    tok = Tokenizer(vocab, counts.pretokenizer, metadata={"training": report})
    return (tok, counts) if return_counts else tok
