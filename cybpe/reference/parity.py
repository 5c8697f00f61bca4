"""Pure-Python reference for parity-aware BPE: recounts everything at every step.

It defines what ``cybpe.training.parity.train_parity_merges`` must reproduce (same merges, ids,
counts, chosen languages and dev lengths). Each step:

* every language's dev length is the weighted number of symbols in its dev chunks;
* the languages are tried from the longest dev length down (the earlier one first on equal lengths);
  the first whose training chunks have an allowed pair gives the merge (its most frequent pair,
  ties to the smallest ``(tie_key(left), tie_key(right))``); during the first ``global_merges``
  steps the counts are summed over all languages instead;
* with a ``window``, the languages that gave more than ``alpha / L`` of the last ``window``
  language-chosen merges (``count * L > alpha * window``) are tried after all the others (in the
  same order among themselves);
* the merge is applied, left to right without overlap, to every chunk of every language.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from cybpe.errors import InvalidParameterError
from cybpe.reference.trainer import merge_word

Counts = tuple[Sequence[bytes], Sequence[int]]
Veto = Callable[[bytes, bytes], object]


@dataclass
class ReferenceParityResult:
    """Same fields as ``cybpe.training.parity.ParityMergeResult``: merges (trainer ids), their
    ids, counts and token bytes; the language chosen at each step (-1 for a global merge) and
    the dev lengths before the first merge and after the last."""

    merges: list[tuple[int, int]] = field(default_factory=list)
    new_ids: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    token_bytes: list[bytes] = field(default_factory=lambda: [bytes([i]) for i in range(256)])
    chosen: list[int] = field(default_factory=list)
    dev_lengths_start: list[int] = field(default_factory=list)
    dev_lengths: list[int] = field(default_factory=list)
    stop_reason: str = "vocab_size"

    def record(self, pair: tuple[int, int], count: int, lang: int, id_of_bytes: dict[bytes, int]) -> bool:
        """Append the merge of ``pair``: the next id, or the existing one when its bytes already
        are a token; true when a new token was made."""
        spelled = self.token_bytes[pair[0]] + self.token_bytes[pair[1]]
        new_id = id_of_bytes.get(spelled)
        if new_id is None:
            new_id = id_of_bytes[spelled] = len(self.token_bytes)
            self.token_bytes.append(spelled)
            made = True
        else:
            made = False
        self.merges.append(pair)
        self.new_ids.append(new_id)
        self.counts.append(count)
        self.chosen.append(lang)
        return made

    def allowed(self, pair: tuple[int, int], max_token_length: Optional[int], veto: Optional[Veto]) -> bool:
        """The rules of ``reference_train_merges``: a pair of two single bytes always merges;
        else its bytes must be fewer than ``max_token_length``; a veto refuses it."""
        left, right = self.token_bytes[pair[0]], self.token_bytes[pair[1]]
        total = len(left) + len(right)
        if max_token_length is not None and total >= max_token_length and total > 2:
            return False
        return veto is None or not veto(left, right)


def check_reference_inputs(train: Sequence[Counts], dev: Sequence[Counts], n_new_tokens: int) -> None:
    """One training and one dev count per language, at least one language, n_new_tokens >= 0."""
    if len(train) != len(dev) or not train:
        raise InvalidParameterError("parity training needs one training count and one dev count per language")
    if n_new_tokens < 0:
        raise InvalidParameterError(f"n_new_tokens must be >= 0; got {n_new_tokens}")


def reference_parity_merges(train: Sequence[Counts], dev: Sequence[Counts], n_new_tokens: int, *,
                            tie_key: Callable[[int], int], min_frequency: int = 0,
                            global_merges: int = 0, max_token_length: Optional[int] = None,
                            veto: Optional[Callable[[bytes, bytes], object]] = None,
                            window: Optional[int] = None, alpha: float = 2.0) -> ReferenceParityResult:
    """Same arguments and result as ``train_parity_merges``, with ``tie_key`` (a map token id ->
    tie rank, smaller wins) in place of its ``tie_break``."""
    check_reference_inputs(train, dev, n_new_tokens)
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
    while created < n_new_tokens:
        now = lengths()
        if len(result.merges) < global_merges:
            found, lang = best_pair(range(len(train))), -1
        else:
            found, lang = None, -1
            n_lang = len(train)

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
        if lang >= 0:
            recent.append(lang)
        if result.record((left, right), n, lang, id_of_bytes):
            created += 1
        new_id = result.new_ids[-1]
        for table in (*train_words, *dev_words):
            table[:] = [(merge_word(word, left, right, new_id), w) for word, w in table]
    result.dev_lengths = lengths()
    return result
