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
from cybpe.training.rules import MergeVeto, either, resolve_veto, superbpe_vetoes
from cybpe.formats.merges import canonical_merges
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.training.progress import Progress
from cybpe.api.tokenizer import Tokenizer
from cybpe.training.trainer import train_merges, train_merges_from
from cybpe.training.parity import ParallelSet
from cybpe.api.train.parity import train_parity
from cybpe.training.prune import RefuseTokens, dead_tokens, final_exposure
from cybpe.encode.encoder import RankEncoder
from cybpe.formats.vocab import Vocab
from cybpe.pretokenize.specials import checked_special_tokens
from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError, check_error_handler, describe

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
    pretokenizer: Union[str, PreTokenizer, None] = None,
    special_tokens: Sequence[str] = (),
    *,
    min_frequency: int = 0,
    tie_break: str = "ids",
    workers: Optional[int] = None,
    progress: Optional[bool] = None,
    errors: str = "strict",
    pretokenizer_params: Optional[dict[str, Any]] = None,
    max_token_length: Optional[int] = None,
    merge_veto: Union[None, str, MergeVeto] = None,
    base: Optional[Tokenizer] = None,
    superword_from: Optional[int] = None,
    superword_pretokenizer: Union[str, PreTokenizer] = "superbpe",
    return_counts: bool = False,
    parity: Optional[ParallelSet] = None,
    prune_exposure: Optional[int] = None,
) -> Any:
    """Train a byte-level BPE tokenizer.

    ``corpus``: an iterable of ``str`` texts, of ``pathlib.Path`` files (see :func:`cybpe.files`;
    read streaming as UTF-8, ``errors`` as for ``bytes.decode``), a mix of both, or a
    :class:`ChunkCounts`. ``vocab_size`` counts the 256 byte tokens, the merges and the special
    tokens, which get the ids after the merges. ``min_frequency`` stops early when the best
    pair occurs fewer times (``stop_reason`` says so). ``tie_break="ids"`` (smallest pair of
    ids, as rustbpe) or ``"huggingface"`` (HF BpeTrainer's order). ``workers`` processes count
    the corpus (the result does not depend on it). ``progress``: None shows bars only on a
    terminal; True forces them; False hides them. ``pretokenizer`` defaults to ``base``'s, else
    ``"cl100k"``.

    Merge rules (they only remove candidates; the next best pair is merged instead):
    ``max_token_length`` as HF ``BpeTrainer``'s, in bytes: a merge is made only if the new token
    is shorter than ``max_token_length`` bytes (two single bytes always merge), so the longest
    token has ``max_token_length - 1`` bytes. ``merge_veto``: ``"scripts"`` (no token mixes
    Unicode scripts or cuts characters unevenly; see :mod:`cybpe.training.rules`) or a callable
    ``veto(left_bytes, right_bytes) -> bool`` that depends on its arguments only.

    ``base``: continue from a tokenizer. Its merges are applied first, in order (a vocabulary
    without a merge list gets one merge per token, from its ranks), its token ids are kept, and
    new merges are appended with the next ids; ``vocab_size`` counts the base's tokens too. Its
    special tokens (then ``special_tokens``) take the ids after the new tokens. Trained on the same
    corpus with the same settings, ``train(c, n, base=train(c, m))`` equals ``train(c, n)``.

    SuperBPE (arXiv 2503.13423): ``superword_from=t`` trains in two stages on the same corpus.
    Stage 1 is the training above up to ``t`` ordinary tokens (bytes and merges); stage 2 re-counts
    the corpus with ``superword_pretokenizer`` (``"superbpe"``: only numbers split, so merges may
    cross spaces and punctuation), replays stage 1's merges and continues to ``vocab_size`` under
    the paper's stage-2 vetoes (no token holds ``": "`` or more than four words) and
    ``merge_veto``. The tokenizer encodes with the stage-2 pre-tokenizer; ``metadata["training"]
    ["stages"]`` records both stages. ``corpus`` must be iterable twice (a list, or paths).

    Parity-aware BPE (arXiv 2508.04796): ``parity=ParallelSet({language: dev_text})`` with
    ``corpus`` a mapping ``{language: training corpus}`` (the same languages). Each merge is the most
    frequent pair of the training data of the language whose dev text is longest in tokens so far
    (see :mod:`cybpe.training.parity`); ``ParallelSet(..., global_merges=M)`` is the hybrid
    variant. Not combinable with ``base``, ``superword_from`` or ``return_counts``.

    Pruning by final exposure: ``prune_exposure=k`` trains, encodes the training chunks with the
    result, and trains again on the same counts refusing every token of two or more bytes that
    appeared fewer than ``k`` times in that encoding (see :mod:`cybpe.training.prune`), so their
    slots go to other merges. Not combinable with ``base``, ``superword_from`` or ``parity``.

    ``return_counts=True`` returns
    ``(tokenizer, chunk_counts)``, so one count can train several vocabulary sizes (or use
    :func:`cybpe.count` first and pass its result as ``corpus``).

    Approximate counts (from a memory cap) train as they are; the report in
    ``tokenizer.metadata["training"]`` records ``exact_counts``, ``max_undercount`` and ``max_pair_undercount``
    (see :class:`ChunkCounts`).
    """
    _check_int("max_token_length", max_token_length, allow_none=True)
    _check_int("superword_from", superword_from, allow_none=True)
    if not isinstance(return_counts, bool):
        raise ParameterTypeError(f"train(): return_counts must be True or False, not {type(return_counts).__name__}")
    if parity is not None and (base is not None or superword_from is not None or return_counts):
        raise InvalidParameterError("parity= cannot be combined with base=, superword_from= or return_counts=")
    _check_int("prune_exposure", prune_exposure, allow_none=True)
    if prune_exposure is not None and (prune_exposure < 1 or base is not None
                                       or superword_from is not None or parity is not None):
        raise InvalidParameterError(
            "prune_exposure must be >= 1 and cannot be combined with base=, superword_from= or parity=")
    if superword_from is not None:
        if return_counts:
            raise InvalidParameterError("return_counts is not available with superword_from (two counts are made)")
        return _train_superbpe(corpus, vocab_size, pretokenizer, special_tokens, superword_from,
                               superword_pretokenizer, base=base, merge_veto=merge_veto,
                               min_frequency=min_frequency, tie_break=tie_break, workers=workers,
                               progress=progress, errors=errors,
                               pretokenizer_params=pretokenizer_params,
                               max_token_length=max_token_length)
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
    check_error_handler(errors, "train(): ")
    if pretokenizer_params is not None and not isinstance(pretokenizer_params, dict):
        raise ParameterTypeError(
            f"train(): pretokenizer_params must be a dict, not {type(pretokenizer_params).__name__}")
    if base is not None and not isinstance(base, Tokenizer):
        raise InvalidParameterError(f"base must be a Tokenizer, not {type(base).__name__}")
    if base is not None and base.normalizer is not None:
        raise InvalidParameterError("base: tokenizers with a normalizer cannot be extended yet")
    veto, veto_name = resolve_veto(merge_veto)
    if pretokenizer is None:
        pretokenizer = base.pretokenizer if base is not None else "cl100k"
    base_specials = [] if base is None else sorted(base.special_tokens, key=base.special_tokens.get)
    specials = list(dict.fromkeys([*base_specials, *checked_special_tokens(special_tokens)]))
    n_kept = 256 if base is None else len(base.vocab.tokens)
    if not isinstance(vocab_size, int) or vocab_size < n_kept + len(specials):
        kept = "256 bytes" if base is None else f"the base's {n_kept} tokens"
        raise TrainingError(
            f"vocab_size must be at least {kept} + {len(specials)} special tokens = "
            f"{n_kept + len(specials)}, got {vocab_size!r}"
        )
    if min_frequency < 0:
        raise InvalidParameterError("min_frequency must be ≥ 0")
    if parity is not None:
        return train_parity(corpus, vocab_size, parity, pretokenizer, specials,
                            min_frequency=min_frequency, tie_break=tie_break, workers=workers,
                            errors=errors, pretokenizer_params=pretokenizer_params,
                            max_token_length=max_token_length, veto=veto, veto_name=veto_name)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    started = time.perf_counter()

    if isinstance(corpus, ChunkCounts):
        counts = corpus
        if pretokenizer_params or (isinstance(pretokenizer, str) and pretokenizer != "cl100k"
                                   and pretokenizer != counts.pretokenizer.name
                                   and base is None):
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
        if base is None and prune_exposure is None:
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
    if prune_exposure is not None:
        exposure = final_exposure(chunks, weights, len(result.token_bytes),
                                  RankEncoder(result.token_bytes, result.merges).encode_piece)
        dead = dead_tokens(exposure, result.token_bytes, prune_exposure)
        if dead:
            result = train_merges(chunks, weights, n_new, min_frequency=min_frequency,
                                  tie_break=tie_break, max_token_length=max_token_length,
                                  veto=either(veto, RefuseTokens(dead)))
        again = final_exposure(chunks, weights, len(result.token_bytes),
                               RankEncoder(result.token_bytes, result.merges).encode_piece)
        pruned = {"min_exposure": prune_exposure, "refused_tokens": len(dead),
                  "dead_after": len(dead_tokens(again, result.token_bytes, prune_exposure))}
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
    return (tok, counts) if return_counts else tok


def _train_superbpe(corpus: Corpus, vocab_size: int, pretokenizer: Union[str, PreTokenizer, None],
                    special_tokens: Sequence[str], superword_from: int,
                    superword_pretokenizer: Union[str, PreTokenizer], *,
                    merge_veto: Union[None, str, MergeVeto], **options: Any) -> Tokenizer:
    """The two SuperBPE stages (see :func:`train`)."""
    if isinstance(corpus, ChunkCounts) or iter(corpus) is corpus:  # type: ignore[arg-type]
        raise InvalidParameterError(
            "superword_from needs a corpus it can read twice (a list of texts or paths), not "
            f"{type(corpus).__name__}: stage 2 counts it again with another pre-tokenizer")
    if not isinstance(superword_from, int) or not 256 <= superword_from <= vocab_size:
        raise InvalidParameterError(
            f"superword_from must be an int in [256, vocab_size={vocab_size}]; got {describe(superword_from)}")
    specials = checked_special_tokens(special_tokens)
    veto, veto_name = resolve_veto(merge_veto)
    pretokenizer_params = options.pop("pretokenizer_params")
    base = options.pop("base")  # stage 1 may itself extend a tokenizer
    started = time.perf_counter()
    stage1 = train(corpus, superword_from + len(specials), pretokenizer, specials, base=base,
                   merge_veto=merge_veto, pretokenizer_params=pretokenizer_params, **options)
    stage1_seconds = time.perf_counter() - started
    stage2 = train(corpus, vocab_size, superword_pretokenizer, specials, base=stage1,
                   merge_veto=either(superbpe_vetoes, veto), **options)
    report = stage2.metadata["training"]
    report["superword_from"] = superword_from
    report["merge_veto"] = "superbpe" if veto_name is None else f"superbpe+{veto_name}"
    report["stages"][0]["seconds"] = round(stage1_seconds, 3)
    report["stages"][1]["seconds"] = round(time.perf_counter() - started - stage1_seconds, 3)
    return stage2


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
