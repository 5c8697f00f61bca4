"""Parity-aware BPE with a cost budget: fair to the worst-off languages while a protected language
(English by default) costs at most a stated fraction more than under plain BPE.

Definition (``budget`` = X, ``protect`` = the protected language p, dev set and training counts as
for parity-aware BPE, :mod:`cybpe.training.parity`):

1. **Plain trajectory.** Plain BPE -- every merge the best pair of the training counts summed over
   all languages, the same tie rule, merge rules and ``min_frequency`` -- is run on the same
   training counts for the same number of new tokens. ``P(k)`` is p's dev length (tokens of its
   dev text) after plain BPE's first ``k`` merges, ``k = 0 .. K``; ``P(k) = P(K)`` for ``k > K``.
2. **Limit.** ``limit(k) = floor((1 + X) * P(k))``.
3. **Step** ``k + 1`` (``k`` merges made, p's dev length ``L_p(k)``):

   * during the first ``global_merges`` merges, the summed counts' best pair (the hybrid variant);
   * else, if ``L_p(k) > limit(k)`` (the budget does not hold), the summed counts' best pair
     (``fallback="global"``), or p's own best pair (``fallback="protected"``);
   * else the parity choice: the language with the longest dev length gives its best pair (with
     ``window``, the moving-window variant's order), as in parity-aware BPE.

   The merge is applied to every language's training and dev chunks.
4. **Stops** as parity-aware BPE: the vocabulary is full, no language has an allowed pair, or the
   chosen pair's count is below ``min_frequency``.

So the budget is checked before each merge against plain BPE *at the same number of merges*: a
parity merge for another language leaves ``L_p`` unchanged while ``P`` falls, and the budget then
sends the next merges to the summed counts until p is back within its limit. It is a rule for
choosing merges, not a guarantee on the end result: a summed-count merge need not shorten p's dev
text, so ``L_p`` can stay above its limit for a while and end above ``limit(K)`` (the report
measures where it ends, on held-out text as well). ``fallback="protected"`` spends the budget
merges on p's own best pairs instead. Budget merges do not enter the window's recent choices.

``cybpe.reference.parity_budget`` is the recount-everything definition the tests compare with;
here the plain run and the budgeted run are the compiled parity loop (``parity_merge.pyx``) and
``P`` comes from replaying plain BPE's merges on p's dev chunks (:func:`dev_length_trajectory`).

Thread safety: the functions keep no state.
"""

from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from typing import Any, Mapping, Optional, Sequence

from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError, describe
from cybpe.training.parity import (Counts, ParallelSet, ParityMergeResult, merge_word, train_parity_merges)

FALLBACKS = ("global", "protected")
#: "every merge is a summed-count merge": plain BPE through the parity loop.
ALL_GLOBAL = 2**62


def check_budget(budget: object, fallback: object) -> float:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not math.isfinite(budget) or budget < 0:
        raise InvalidParameterError(f"budget must be a finite number >= 0 (a fraction: 0.02 = 2%), not {describe(budget)}")
    if fallback not in FALLBACKS:
        raise InvalidParameterError(f"fallback must be 'global' or 'protected', not {describe(fallback)}")
    return float(budget)


def budget_limits(trajectory: Sequence[int], budget: float) -> list[int]:
    """``floor((1 + budget) * P(k))`` for every ``P(k)`` of the plain trajectory."""
    return [math.floor(p * (1.0 + budget)) for p in trajectory]


def dev_length_trajectory(counts: Counts, merges: Sequence[tuple[int, int]], new_ids: Sequence[int]) -> list[int]:
    """The weighted token count of ``counts`` (chunks as bytes, weights) before any merge and after
    each of ``merges`` (applied in order, left to right without overlap, as training applies them):
    ``len(merges) + 1`` numbers. Only the chunks holding a merged pair are touched."""
    chunks, weights = counts
    words = [list(chunk) for chunk in chunks]
    w = [int(x) for x in weights]
    index: dict[tuple[int, int], set[int]] = defaultdict(set)
    for i, word in enumerate(words):
        for pair in zip(word, word[1:]):
            index[pair].add(i)
    length = sum(len(word) * wi for word, wi in zip(words, w))
    out = [length]
    for (left, right), new_id in zip(merges, new_ids):
        for i in index.pop((left, right), ()):
            old = words[i]
            new = merge_word(old, left, right, new_id)
            length -= (len(old) - len(new)) * w[i]
            for pair in zip(old, old[1:]):
                if pair != (left, right):
                    index[pair].discard(i)
            for pair in zip(new, new[1:]):
                index[pair].add(i)
            words[i] = new
        out.append(length)
    return out


def budgeted_parity_merges(train: Sequence[Counts], dev: Sequence[Counts], n_new_tokens: int, *,
                           protect: int, budget: float, fallback: str = "global", tie_break: str = "ids",
                           min_frequency: int = 0, global_merges: int = 0,
                           max_token_length: Optional[int] = None, veto=None,
                           window: Optional[int] = None, alpha: float = 2.0) -> tuple[ParityMergeResult, list[int]]:
    """The budgeted merges (module docstring) and the plain trajectory ``P``. ``protect`` is the
    protected language's index. Same result as
    ``cybpe.reference.parity_budget.reference_budget_parity_merges`` with the matching tie key."""
    budget = check_budget(budget, fallback)
    if isinstance(protect, bool) or not isinstance(protect, int) or not 0 <= protect < len(dev):
        raise InvalidParameterError(f"protect must index one of the {len(dev)} languages, not {describe(protect)}")
    plain = train_parity_merges(train, dev, n_new_tokens, tie_break=tie_break, min_frequency=min_frequency,
                                global_merges=ALL_GLOBAL, max_token_length=max_token_length, veto=veto)
    trajectory = dev_length_trajectory(dev[protect], plain.merges, plain.new_ids)
    result = train_parity_merges(train, dev, n_new_tokens, tie_break=tie_break, min_frequency=min_frequency,
                                 global_merges=global_merges, max_token_length=max_token_length, veto=veto,
                                 window=window, alpha=alpha, budget_language=protect,
                                 budget_limits=budget_limits(trajectory, budget),
                                 budget_summed=fallback == "global")
    return result, trajectory


def train_parity_budget(corpus: Mapping[str, Any], vocab_size: int, parity: ParallelSet, *,
                        budget: float = 0.02, protect: str = "en", fallback: str = "global",
                        pretokenizer: Any = "cl100k", special_tokens: Sequence[str] = (),
                        min_frequency: int = 0, tie_break: str = "ids", workers: Optional[int] = None,
                        errors: str = "strict") -> Any:
    """Train a parity-aware tokenizer whose protected language pays at most ``budget`` more than
    under plain BPE on the dev set (the definition: :mod:`cybpe.training.parity_budget`).

    ``corpus``: ``{language: texts, paths or ChunkCounts}`` with the languages of ``parity`` (a
    :class:`ParallelSet`, whose ``global_merges``, ``window`` and ``alpha`` apply as in
    ``train(parity=...)``); ``budget``: a fraction (0.02 = at most 2% more dev tokens for
    ``protect`` than plain BPE after as many merges); ``fallback``: ``"global"`` (the summed
    counts' best pair when over the budget) or ``"protected"`` (the protected language's own best
    pair). Returns a :class:`cybpe.Tokenizer`; ``metadata["training"]["parity"]`` has the merges
    per language, the budget merges, the dev lengths and the protected language's plain and final
    dev lengths.
    """
    from cybpe.api.tokenizer import Tokenizer
    from cybpe.formats.vocab import Vocab
    from cybpe.training.corpus import count_corpus
    from cybpe.training.counts import ChunkCounts
    from cybpe.training.shards import Shard

    budget = check_budget(budget, fallback)
    if not isinstance(parity, ParallelSet):
        raise ParameterTypeError(f"train_parity_budget(): parity must be a ParallelSet, not {type(parity).__name__}")
    if not isinstance(corpus, Mapping):
        raise ParameterTypeError("train_parity_budget(): corpus must be a mapping language -> training corpus, "
                                 f"not {type(corpus).__name__}")
    languages = parity.languages
    if set(corpus) != set(languages):
        raise InvalidParameterError(
            "train_parity_budget(): the corpus and the parallel set must have the same languages "
            f"(only in corpus: {sorted(set(corpus) - set(languages))}, only in the parallel set: "
            f"{sorted(set(languages) - set(corpus))})")
    if protect not in languages:
        raise InvalidParameterError(f"train_parity_budget(): protect={protect!r} is not one of the languages")
    specials = list(dict.fromkeys(special_tokens))
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 256 + len(specials):
        raise TrainingError(f"vocab_size must be at least 256 + {len(specials)} special tokens, got {vocab_size!r}")
    started = time.perf_counter()
    train_counts = []
    pre = None
    for lang in languages:
        items = corpus[lang]
        if isinstance(items, ChunkCounts):
            counts = items
        else:
            if isinstance(items, (str, bytes)):
                raise ParameterTypeError(f"train_parity_budget(): corpus[{lang!r}] must be an iterable of texts or "
                                         "paths, or ChunkCounts, not a single str")
            if isinstance(items, (os.PathLike, Shard)):
                items = [items]
            counts = ChunkCounts(pretokenizer if pre is None else pre, specials)
            count_corpus(counts, items, workers=workers, errors=errors)
        if pre is None:
            pre = counts.pretokenizer
        elif counts.pretokenizer.spec() != pre.spec():
            raise InvalidParameterError(f"train_parity_budget(): corpus[{lang!r}] was counted with another pre-tokenizer")
        train_counts.append(counts)
    assert pre is not None
    if all(len(c) == 0 for c in train_counts):
        raise TrainingError("the corpus is empty: the pre-tokenizer produced no chunks")
    dev_counts = [ChunkCounts(pre, specials).update([parity.texts[lang]]) for lang in languages]
    counting_seconds = time.perf_counter() - started
    merge_started = time.perf_counter()
    p = languages.index(protect)
    result, trajectory = budgeted_parity_merges(
        [c.sorted_arrays() for c in train_counts], [c.sorted_arrays() for c in dev_counts],
        vocab_size - 256 - len(specials), protect=p, budget=budget, fallback=fallback, tie_break=tie_break,
        min_frequency=min_frequency, global_merges=parity.global_merges, window=parity.window, alpha=parity.alpha)
    merging_seconds = time.perf_counter() - merge_started
    tokens = result.token_bytes
    vocab = Vocab(tokens=tokens, merges=result.merges,
                  special_tokens={s: len(tokens) + i for i, s in enumerate(specials)},
                  ignore_merges=True, encode_by_rank=True)
    chosen = {lang: 0 for lang in languages}
    for k in result.chosen:
        if k >= 0:
            chosen[languages[k]] += 1
    limits = budget_limits(trajectory, budget)
    n_budget = 0
    # replay the decisions: a merge was the budget's when the protected dev length was over its limit
    lengths = dev_length_trajectory(dev_counts[p].sorted_arrays(), result.merges, result.new_ids)
    for k, lang in enumerate(result.chosen):
        if k >= parity.global_merges and lengths[k] > limits[min(k, len(limits) - 1)]:
            n_budget += 1
    report: dict[str, Any] = {
        "stop_reason": result.stop_reason,
        "requested_vocab_size": vocab_size,
        "n_merges": len(result.merges),
        "unique_chunks": sum(len(c) for c in train_counts),
        "chunk_occurrences": sum(c.total for c in train_counts),
        "tie_break": tie_break,
        "min_frequency": min_frequency,
        "counting_seconds": round(counting_seconds, 3),
        "merging_seconds": round(merging_seconds, 3),
        "parity": {
            "languages": languages,
            "global_merges": parity.global_merges,
            "window": parity.window,
            "alpha": parity.alpha,
            "budget": budget,
            "protect": protect,
            "fallback": fallback,
            "budget_merges": n_budget,
            "merges_per_language": chosen,
            "dev_tokens_before": dict(zip(languages, result.dev_lengths_start)),
            "dev_tokens_after": dict(zip(languages, result.dev_lengths)),
            "protected_dev_tokens_plain": trajectory[-1],
            "protected_dev_tokens": lengths[-1],
        },
    }
    return Tokenizer(vocab, pre, metadata={"training": report})
