"""Plain BPE, the mode every other builds on: corpus → chunk counts → merges → Tokenizer.

Also resuming from a base tokenizer (``base=``; SuperBPE's stage 2) and, with a :class:`Prune`,
pruning by final exposure (:mod:`cybpe.api.train.prune`)."""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Iterable, Optional, Sequence, Union

from cybpe.api.tokenizer import Tokenizer
from cybpe.api.train.options import Prune, Settings, all_specials, check_vocab_size
from cybpe.api.train.prune import pruned_merges
from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError
from cybpe.formats.merges import canonical_merges
from cybpe.formats.vocab import Vocab
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.training.corpus import count_corpus
from cybpe.training.counts import ChunkCounts
from cybpe.training.progress import Progress
from cybpe.training.shards import Shard
from cybpe.training.trainer import train_merges, train_merges_from

Corpus = Union[ChunkCounts, Iterable[Union[str, os.PathLike]]]


def train_plain(corpus: Corpus, vocab_size: int, pretokenizer: Union[str, PreTokenizer, None],
                special_tokens: Sequence[str], settings: Settings, *, base: Optional[Tokenizer] = None,
                prune: Optional[Prune] = None) -> tuple[Tokenizer, ChunkCounts]:
    """Plain BPE (optionally from ``base``, optionally pruned): the tokenizer and its counts."""
    min_frequency, tie_break, workers = settings.min_frequency, settings.tie_break, settings.workers
    errors, pretokenizer_params = settings.errors, settings.pretokenizer_params
    max_token_length, veto, veto_name = settings.max_token_length, settings.veto, settings.veto_name
    if pretokenizer is None:
        pretokenizer = base.pretokenizer if base is not None else "cl100k"
    specials = all_specials(base, special_tokens)
    n_kept = 256 if base is None else len(base.vocab.tokens)
    check_vocab_size(vocab_size, base, specials)
    show = settings.show
    started = time.perf_counter()

    if isinstance(corpus, ChunkCounts):
        counts = corpus
        if pretokenizer_params or (isinstance(pretokenizer, str) and pretokenizer != "cl100k"
                                   and pretokenizer != counts.pretokenizer.name
                                   and base is None):
            warnings.warn("train(): corpus is ChunkCounts; its own pre-tokenizer is used", stacklevel=3)
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
        if isinstance(corpus, (os.PathLike, Shard)):
            corpus = [corpus]  # one file or folder
        with Progress(show, "counting", unit="B") as bar:
            # Without a bar, no progress callback: its UTF-8 sizes encoded every text once more
            # (0.9 s of the 3.0 s to train 50 MB / 418 k documents to 32768 tokens).
            count_corpus(counts, corpus, workers=workers, errors=errors,
                         progress=bar.advance if show else None)
    counting_seconds = time.perf_counter() - started
    if len(counts) == 0:
        raise TrainingError("the corpus is empty: the pre-tokenizer produced no chunks")

    n_new = vocab_size - n_kept - len(specials)
    start = _Start.of(base)
    merge_started = time.perf_counter()
    with Progress(show, "merging", unit="merges", total=n_new) as bar:
        if base is None and prune is None:
            # the counts' own arrays, read in place while loading: no bytes object per chunk
            result = train_merges_from(counts.with_arrays, n_new, min_frequency=min_frequency,
                                       tie_break=tie_break,
                                       progress=lambda done, total: bar.update(done),
                                       max_token_length=max_token_length, veto=veto)
        else:
            chunks, weights = counts.sorted_arrays()
            result = train_merges(chunks, weights, n_new, min_frequency=min_frequency,
                                  tie_break=tie_break, progress=lambda done, total: bar.update(done),
                                  max_token_length=max_token_length, veto=veto,
                                  seed_tokens=start.seeds, forced_merges=start.forced,
                                  forced_counts=start.counts)
    pruned = None
    if prune is not None:
        result, pruned = pruned_merges(chunks, weights, result, n_new, settings, prune.exposure)
    merging_seconds = time.perf_counter() - merge_started

    tokens, merges = start.output(result.token_bytes, result.merges)
    first_special = len(tokens)
    vocab = Vocab(
        tokens=tokens,
        merges=merges,
        special_tokens={s: first_special + i for i, s in enumerate(specials)},
        ignore_merges=True if base is None else base.vocab.ignore_merges,
        encode_by_rank=True if base is None else (base.vocab.encode_by_rank
                                                  or base.vocab.merges is None),
    )
    report = {
        "stop_reason": result.stop_reason,
        "requested_vocab_size": vocab_size,
        "n_merges": len(result.merges),
        "unique_chunks": len(counts),
        "chunk_occurrences": counts.total,
        "exact_counts": counts.exact,
        "max_undercount": counts.max_undercount,
        "max_pair_undercount": counts.max_pair_undercount,
        "tie_break": tie_break,
        "min_frequency": min_frequency,
        "counting_seconds": round(counting_seconds, 3),
        "merging_seconds": round(merging_seconds, 3),
        "merge_counts": [int(c) for c in result.counts],
    }
    if max_token_length is not None:
        report["max_token_length"] = max_token_length
    if veto_name is not None:
        report["merge_veto"] = veto_name
    if pruned is not None:
        report["pruned"] = pruned
    if base is not None:
        report["stages"] = [*start.stages, {"pretokenizer": counts.pretokenizer.name,
                                            "n_merges": len(merges),
                                            "n_tokens": len(tokens)}]
    tok = Tokenizer(vocab, counts.pretokenizer, metadata={"training": report})
    return tok, counts


class _Start:
    """Where training starts: the 256 bytes, or a base tokenizer's tokens and merges.

    The trainer numbers bytes 0..255 by value and then the base's longer tokens 256, 257, ... in
    base id order (its seeds); ``output`` maps the trainer's ids back (base ids kept, new tokens
    after the base's).
    """

    def __init__(self, seeds: list[bytes], forced: list[tuple[int, int]], base_ids: list[int],
                 n_base: int, stages: list[dict[str, Any]], counts: list[int]) -> None:
        self.seeds, self.forced, self.stages, self.counts = seeds, forced, stages, counts
        self._base_ids = base_ids  # trainer id -> base id, for the bytes and the seeds
        self._n_base = n_base

    @classmethod
    def of(cls, base: Optional[Tokenizer]) -> "_Start":
        if base is None:
            return cls([], [], list(range(256)), 256, [], [])
        tokens = base.vocab.tokens
        trainer_id = {}
        seeds: list[bytes] = []
        for i, tok in enumerate(tokens):
            if len(tok) == 1:
                trainer_id[i] = tok[0]
            else:
                trainer_id[i] = 256 + len(seeds)
                seeds.append(tok)
        base_ids = [0] * (256 + len(seeds))
        for i, t in trainer_id.items():
            base_ids[t] = i
        merges = base.vocab.merges if base.vocab.merges is not None else canonical_merges(tokens)
        forced = [(trainer_id[a], trainer_id[b]) for a, b in merges]
        report = base.metadata.get("training", {})
        # the inherited merges keep the counts they were learned with (0 when unknown)
        counts = list(report.get("merge_counts") or [])
        if len(counts) != len(forced):
            counts = [0] * len(forced)
        stages = list(report.get("stages") or [{"pretokenizer": base.pretokenizer.name,
                                                "n_merges": len(merges),
                                                "n_tokens": len(tokens)}])
        return cls(seeds, forced, base_ids, len(tokens), stages, counts)

    def output(self, token_bytes: Sequence[bytes],
               merges: Sequence[tuple[int, int]]) -> tuple[list[bytes], list[tuple[int, int]]]:
        """The tokens in output id order and the merges in output ids."""
        known = len(self._base_ids)

        def out(t: int) -> int:
            return self._base_ids[t] if t < known else self._n_base + t - known

        tokens = [b""] * self._n_base
        for t in range(known):
            tokens[self._base_ids[t]] = token_bytes[t]
        tokens.extend(token_bytes[known:])
        return tokens, [(out(a), out(b)) for a, b in merges]
