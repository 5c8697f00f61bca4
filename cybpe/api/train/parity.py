"""``train(..., parity=ParallelSet(...))``: per-language counts -> parity-aware merges -> Tokenizer."""

from __future__ import annotations

import os
import time
from typing import Any, Mapping, Optional, Sequence

from cybpe.api.tokenizer import Tokenizer
from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError
from cybpe.formats.vocab import Vocab
from cybpe.training.corpus import count_corpus
from cybpe.training.counts import ChunkCounts
from cybpe.training.parity import ParallelSet, train_parity_merges
from cybpe.training.rules import MergeVeto
from cybpe.training.shards import Shard


def train_parity(corpus: Any, vocab_size: int, parity: ParallelSet, pretokenizer: Any,
                 specials: Sequence[str], *, min_frequency: int, tie_break: str,
                 workers: Optional[int], errors: str, pretokenizer_params: Optional[dict],
                 max_token_length: Optional[int], veto: Optional[MergeVeto],
                 veto_name: Optional[str]) -> Tokenizer:
    """Count each language's training corpus and dev text, run the parity loop, build the Tokenizer."""
    if not isinstance(parity, ParallelSet):
        raise ParameterTypeError(f"train(): parity must be a ParallelSet, not {type(parity).__name__}")
    if not isinstance(corpus, Mapping):
        raise ParameterTypeError(
            "train(parity=...): corpus must be a mapping language -> training corpus (texts, paths "
            f"or ChunkCounts), not {type(corpus).__name__}")
    languages = parity.languages
    if set(corpus) != set(languages):
        raise InvalidParameterError(
            "train(parity=...): the corpus and the parallel set must have the same languages "
            f"(only in corpus: {sorted(set(corpus) - set(languages))}, only in the parallel set: "
            f"{sorted(set(languages) - set(corpus))})")
    started = time.perf_counter()
    train_counts = []
    pre = None
    for lang in languages:
        items = corpus[lang]
        if isinstance(items, ChunkCounts):
            counts = items
        else:
            if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
                if not isinstance(items, (os.PathLike, Shard)):
                    raise ParameterTypeError(
                        f"train(parity=...): corpus[{lang!r}] must be an iterable of texts or paths, "
                        f"or ChunkCounts, not a single {type(items).__name__}")
            if isinstance(items, (os.PathLike, Shard)):
                items = [items]
            counts = ChunkCounts(pretokenizer if pre is None else pre, specials,
                                 **(pretokenizer_params if pre is None and pretokenizer_params else {}))
            count_corpus(counts, items, workers=workers, errors=errors)
        if pre is None:
            pre = counts.pretokenizer
        elif counts.pretokenizer.spec() != pre.spec():
            raise InvalidParameterError(f"train(parity=...): corpus[{lang!r}] was counted with another pre-tokenizer")
        train_counts.append(counts)
    assert pre is not None
    dev_counts = [ChunkCounts(pre, specials).update([parity.texts[lang]]) for lang in languages]
    counting_seconds = time.perf_counter() - started
    if all(len(c) == 0 for c in train_counts):
        raise TrainingError("the corpus is empty: the pre-tokenizer produced no chunks")
    n_new = vocab_size - 256 - len(specials)
    merge_started = time.perf_counter()
    result = train_parity_merges([c.sorted_arrays() for c in train_counts],
                                 [c.sorted_arrays() for c in dev_counts], n_new,
                                 tie_break=tie_break, min_frequency=min_frequency,
                                 global_merges=parity.global_merges,
                                 max_token_length=max_token_length, veto=veto,
                                 window=parity.window, alpha=parity.alpha)
    merging_seconds = time.perf_counter() - merge_started
    tokens = result.token_bytes
    vocab = Vocab(tokens=tokens, merges=result.merges,
                  special_tokens={s: len(tokens) + i for i, s in enumerate(specials)},
                  ignore_merges=True, encode_by_rank=True)
    chosen = {lang: 0 for lang in languages}
    for k in result.chosen:
        if k >= 0:
            chosen[languages[k]] += 1
    report: dict[str, Any] = {
        "stop_reason": result.stop_reason,
        "requested_vocab_size": vocab_size,
        "n_merges": len(result.merges),
        "unique_chunks": sum(len(c) for c in train_counts),
        "chunk_occurrences": sum(c.total for c in train_counts),
        "exact_counts": all(c.exact for c in train_counts),
        "tie_break": tie_break,
        "min_frequency": min_frequency,
        "counting_seconds": round(counting_seconds, 3),
        "merging_seconds": round(merging_seconds, 3),
        "merge_counts": [int(c) for c in result.counts],
        "parity": {
            "languages": languages,
            "global_merges": parity.global_merges,
            "window": parity.window,
            "alpha": parity.alpha,
            "merges_per_language": chosen,
            "dev_tokens_before": dict(zip(languages, result.dev_lengths_start)),
            "dev_tokens_after": dict(zip(languages, result.dev_lengths)),
        },
    }
    if max_token_length is not None:
        report["max_token_length"] = max_token_length
    if veto_name is not None:
        report["merge_veto"] = veto_name
    return Tokenizer(vocab, pre, metadata={"training": report})
