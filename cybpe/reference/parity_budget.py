"""Pure-Python reference for budgeted parity-aware BPE (the definition:
``cybpe.training.parity_budget``): recounts everything at every step.

1. Plain BPE (``reference_parity_merges`` with every merge on the summed counts) gives the merges
   whose replay on the protected language's dev words, one merge at a time, is the trajectory
   ``P(0..K)``; ``limit(k) = floor((1 + budget) * P(min(k, K)))``.
2. Each step: the dev lengths are recounted; during the first ``global_merges`` steps, or while the
   protected language's dev length is above ``limit(step)``, the merge is the best pair of the
   summed counts (``fallback="global"``) or of the protected language (``"protected"``), and it
   does not enter the window; otherwise the languages are tried as in
   ``cybpe.reference.parity``.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable, Optional, Sequence

from cybpe.reference.parity import Counts, ReferenceParityResult, check_reference_inputs, reference_parity_merges
from cybpe.reference.trainer import merge_word


def reference_budget_parity_merges(train: Sequence[Counts], dev: Sequence[Counts], n_new_tokens: int, *,
                                   protect: int, budget: float, fallback: str = "global",
                                   tie_key: Callable[[int], int], min_frequency: int = 0,
                                   global_merges: int = 0, max_token_length: Optional[int] = None,
                                   veto: Optional[Callable[[bytes, bytes], object]] = None,
                                   window: Optional[int] = None,
                                   alpha: float = 2.0) -> tuple[ReferenceParityResult, list[int]]:
    """Same arguments and result as ``budgeted_parity_merges``, with ``tie_key`` in place of its
    ``tie_break``."""
    check_reference_inputs(train, dev, n_new_tokens)
    plain = reference_parity_merges(train, dev, n_new_tokens, tie_key=tie_key, min_frequency=min_frequency,
                                    global_merges=2**62, max_token_length=max_token_length, veto=veto)
    words = [(list(c), int(w)) for c, w in zip(*dev[protect])]
    trajectory = [sum(w * len(word) for word, w in words)]
    for (left, right), new_id in zip(plain.merges, plain.new_ids):
        words = [(merge_word(word, left, right, new_id), w) for word, w in words]
        trajectory.append(sum(w * len(word) for word, w in words))
    limits = [math.floor(p * (1.0 + budget)) for p in trajectory]

    recent: deque[int] = deque(maxlen=window)
    train_words = [[(list(c), int(w)) for c, w in zip(*table)] for table in train]
    dev_words = [[(list(c), int(w)) for c, w in zip(*table)] for table in dev]
    result = ReferenceParityResult()
    id_of_bytes = {tok: i for i, tok in enumerate(result.token_bytes)}

    def lengths() -> list[int]:
        return [sum(w * len(word) for word, w in lang) for lang in dev_words]

    def best_pair(langs: Sequence[int]) -> Optional[tuple[tuple[int, int], int]]:
        table: dict[tuple[int, int], int] = {}
        for lang in langs:
            for word, w in train_words[lang]:
                for pair in zip(word, word[1:]):
                    table[pair] = table.get(pair, 0) + w
        ranked = sorted(table.items(), key=lambda item: (-item[1], tie_key(item[0][0]), tie_key(item[0][1])))
        for pair, n in ranked:
            if result.allowed(pair, max_token_length, veto):
                return pair, n
        return None

    result.dev_lengths_start = lengths()
    created = 0
    n_lang = len(train)
    while created < n_new_tokens:
        now = lengths()
        step = len(result.merges)
        over = now[protect] > limits[min(step, len(limits) - 1)]
        by_budget = False
        if step < global_merges:
            found, lang = best_pair(range(n_lang)), -1
        elif over:
            by_budget = True
            if fallback == "global":
                found, lang = best_pair(range(n_lang)), -1
            else:
                found, lang = best_pair([protect]), protect
        else:
            found, lang = None, -1

            def over_share(l: int) -> bool:
                return window is not None and recent.count(l) * n_lang > alpha * window

            for cand in sorted(range(n_lang), key=lambda l: (over_share(l), -now[l], l)):
                found = best_pair([cand])
                if found is not None:
                    lang = cand
                    break
        if found is None:
            result.stop_reason = "no_pairs"
            break
        (left, right), n = found
        if n < min_frequency:
            result.stop_reason = "min_frequency"
            break
        if lang >= 0 and not by_budget:
            recent.append(lang)
        if result.record((left, right), n, lang, id_of_bytes):
            created += 1
        new_id = result.new_ids[-1]
        for table in (*train_words, *dev_words):
            table[:] = [(merge_word(word, left, right, new_id), w) for word, w in table]
    result.dev_lengths = lengths()
    return result, trajectory
