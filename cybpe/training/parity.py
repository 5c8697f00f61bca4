"""Parity-aware BPE (arXiv 2508.04796): each merge helps the language the parallel set finds worst.

Inputs: per-language training chunk counts and a parallel development set (the same text in every
language, line-aligned). At each step:

1. ``len_l`` is the number of tokens language ``l``'s dev text takes under the merges so far;
2. the language ``l*`` with the largest ``len_l`` is chosen (the first in the set's order on ties);
3. ``l*``'s own training counts give the merge: the pair with the highest count there, ties broken
   by the library's rule (smallest ``(left, right)`` ids, or HF's byte order) -- the paper's code
   breaks them toward the lexicographically largest pair instead, which no other cybpe trainer does;
4. the merge is applied to every language's training and dev chunks.

``global_merges=M`` is the paper's hybrid variant: the first ``M`` merges are ordinary BPE merges on
the summed counts of all languages. A language whose training data has no pair left is passed over
(the next worst language is asked; the paper's code stops there instead); training stops when no
language has one, or when ``l*``'s best count is below ``min_frequency`` (as the paper's code).

The loop keeps, per language, the pair counts and a lazy max-heap (one key per pair: its count, then
the tie rule). After a pair is pushed its count only falls in every language (rises only create
pairs holding the token just made, pushed once at their final counts), so each stored key bounds
the true one and the lazy pop is exact, as in the single-language trainer. Chunks are shared across
languages and each carries its per-language training and dev weights; a pair -> chunks index limits
each step to the chunks that hold the pair. The loop is Python (see the README for timings).
``cybpe.reference.parity`` is the slow definition the tests compare with.

Thread safety: :class:`ParallelSet` is immutable (safe to share); the functions keep no state.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

from cybpe.errors import InvalidParameterError, ParameterTypeError, describe
from cybpe.training.trainer import huggingface_byte_order

Veto = Callable[[bytes, bytes], object]


class ParallelSet:
    """A parallel development set for parity-aware training: one text per language, line-aligned.

    ``texts``: ``{language: text}``, every text with the same number of lines (line ``i`` of each
    translates line ``i`` of the others). The order of the mapping is the order ties between
    languages are broken in. ``global_merges``: the hybrid variant's number of leading ordinary
    (summed-count) merges; 0 is the classic algorithm.

    Immutable; safe to share between threads.
    """

    __slots__ = ("_texts", "_global_merges")

    def __init__(self, texts: Mapping[str, str], *, global_merges: int = 0) -> None:
        if not isinstance(texts, Mapping):
            raise ParameterTypeError(f"ParallelSet(texts): a mapping language -> text, not {type(texts).__name__}")
        if not texts:
            raise InvalidParameterError("ParallelSet needs at least one language")
        lines = None
        for lang, text in texts.items():
            if not isinstance(lang, str) or not isinstance(text, str):
                raise ParameterTypeError(
                    f"ParallelSet: languages and texts must be str, got {describe(lang)}: {type(text).__name__}")
            n = len(text.splitlines())
            if lines is None:
                lines = (lang, n)
            elif n != lines[1]:
                raise InvalidParameterError(
                    f"ParallelSet: the texts are not line-aligned ({lines[0]!r} has {lines[1]} lines, "
                    f"{lang!r} has {n})")
        if isinstance(global_merges, bool) or not isinstance(global_merges, int) or global_merges < 0:
            raise InvalidParameterError(f"ParallelSet: global_merges must be an int >= 0, not {describe(global_merges)}")
        self._texts = dict(texts)
        self._global_merges = global_merges

    @property
    def languages(self) -> list[str]:
        """The languages, in tie-breaking order."""
        return list(self._texts)

    @property
    def texts(self) -> dict[str, str]:
        """A copy of ``{language: text}``."""
        return dict(self._texts)

    @property
    def global_merges(self) -> int:
        """Leading summed-count merges (the hybrid variant); 0 for the classic algorithm."""
        return self._global_merges

    def __repr__(self) -> str:
        return f"ParallelSet({len(self._texts)} languages, global_merges={self._global_merges})"


@dataclass
class ParityMergeResult:
    """Merges (trainer ids: bytes 0..255, then new tokens), their ids, counts and token bytes; the
    language chosen at each step (-1 for a global merge) and the dev lengths before the first merge
    and after the last."""

    merges: list[tuple[int, int]] = field(default_factory=list)
    new_ids: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    token_bytes: list[bytes] = field(default_factory=lambda: [bytes([i]) for i in range(256)])
    chosen: list[int] = field(default_factory=list)
    dev_lengths_start: list[int] = field(default_factory=list)
    dev_lengths: list[int] = field(default_factory=list)
    stop_reason: str = "vocab_size"

    def record(self, pair: tuple[int, int], count: int, lang: int, id_of_bytes: dict[bytes, int]) -> bool:
        """Append the merge of ``pair`` (the next id, or the existing one when its bytes already are
        a token, as the other trainers do); true when a new token was made."""
        spelled = self.token_bytes[pair[0]] + self.token_bytes[pair[1]]
        new_id = id_of_bytes.get(spelled)
        made = new_id is None
        if new_id is None:
            new_id = id_of_bytes[spelled] = len(self.token_bytes)
            self.token_bytes.append(spelled)
        self.merges.append(pair)
        self.new_ids.append(new_id)
        self.counts.append(count)
        self.chosen.append(lang)
        return made

    def allowed(self, pair: tuple[int, int], max_token_length: Optional[int], veto: Optional[Veto]) -> bool:
        """Whether the rules let ``pair`` merge (as ``train_merges``' rules)."""
        left, right = self.token_bytes[pair[0]], self.token_bytes[pair[1]]
        total = len(left) + len(right)
        if max_token_length is not None and total >= max_token_length and total > 2:
            return False
        return veto is None or not veto(left, right)


Counts = tuple[Sequence[bytes], Sequence[int]]


def tie_key_for(tie_break: str) -> Callable[[int], int]:
    """``train()``'s ``tie_break`` as a map token id -> tie rank (smaller wins among equal counts):
    the id itself (``"ids"``), or the bytes in HF ByteLevel order (``"huggingface"``)."""
    if tie_break == "huggingface":
        rank_of_byte = {b: r for r, b in enumerate(huggingface_byte_order())}
        return lambda token: rank_of_byte[token] if token < 256 else token
    if tie_break == "ids":
        return lambda token: token
    raise InvalidParameterError(f"tie_break must be 'ids' or 'huggingface', not {describe(tie_break)}")


def check_parity_inputs(train: Sequence[Counts], dev: Sequence[Counts], n_new_tokens: int,
                        min_frequency: int, global_merges: int) -> None:
    """Validate the arguments both parity trainers share."""
    if len(train) != len(dev) or not train:
        raise InvalidParameterError("parity training needs one training count and one dev count per language")
    for chunks, weights in [*train, *dev]:
        if len(chunks) != len(weights):
            raise InvalidParameterError("chunks and weights differ in length")
        if any(int(w) <= 0 for w in weights):
            raise InvalidParameterError("every weight must be > 0")
    for name, value in (("n_new_tokens", n_new_tokens), ("min_frequency", min_frequency),
                        ("global_merges", global_merges)):
        if value < 0:
            raise InvalidParameterError(f"{name} must be >= 0; got {value}")


def merge_word(word: list[int], left: int, right: int, new_id: int) -> list[int]:
    """Replace each ``left right`` in ``word`` by ``new_id``, left to right, no overlap."""
    out: list[int] = []
    i, n = 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == left and word[i + 1] == right:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def train_parity_merges(train: Sequence[Counts], dev: Sequence[Counts], n_new_tokens: int, *,
                        tie_key: Callable[[int], int], min_frequency: int = 0,
                        global_merges: int = 0, max_token_length: Optional[int] = None,
                        veto: Optional[Veto] = None) -> ParityMergeResult:
    """Learn parity-aware merges (module docstring). ``train[l]``/``dev[l]``: language ``l``'s
    ``(chunks, weights)``; ``tie_key`` maps a token id to its tie rank (smaller wins)."""
    check_parity_inputs(train, dev, n_new_tokens, min_frequency, global_merges)
    n_lang = len(train)
    index: dict[bytes, int] = {}
    words: list[list[int]] = []
    train_w: list[list[tuple[int, int]]] = []
    dev_w: list[list[tuple[int, int]]] = []
    dev_len = [0] * n_lang
    for which, table in ((0, train), (1, dev)):
        for lang, (chunks, weights) in enumerate(table):
            for chunk, w in zip(chunks, weights):
                w = int(w)
                if which == 1:
                    dev_len[lang] += w * len(chunk)
                if len(chunk) < 2:
                    continue
                c = index.get(chunk)
                if c is None:
                    c = index[chunk] = len(words)
                    words.append(list(chunk))
                    train_w.append([])
                    dev_w.append([])
                (dev_w if which else train_w)[c].append((lang, w))
    total_w = [sum(w for _, w in tw) for tw in train_w]

    counts: list[dict[tuple[int, int], int]] = [{} for _ in range(n_lang)]
    summed: dict[tuple[int, int], int] = {}
    where: dict[tuple[int, int], set[int]] = {}
    for c, word in enumerate(words):
        for pair in zip(word, word[1:]):
            where.setdefault(pair, set()).add(c)
            for lang, w in train_w[c]:
                counts[lang][pair] = counts[lang].get(pair, 0) + w
            if global_merges and total_w[c]:
                summed[pair] = summed.get(pair, 0) + total_w[c]

    def key(count: int, pair: tuple[int, int]) -> tuple[int, int, int, int, int]:
        return (-count, tie_key(pair[0]), tie_key(pair[1]), pair[0], pair[1])

    heaps = [[key(n, p) for p, n in table.items()] for table in counts]
    summed_heap = [key(n, p) for p, n in summed.items()]
    for h in (*heaps, summed_heap):
        heapq.heapify(h)

    result = ParityMergeResult()
    result.dev_lengths_start = list(dev_len)
    id_of_bytes = {tok: i for i, tok in enumerate(result.token_bytes)}
    refused: set[tuple[int, int]] = set()

    def best(heap: list, table: dict[tuple[int, int], int]) -> Optional[tuple[tuple[int, int], int]]:
        """The top pair of ``heap`` with its count (lazy validation), or None when it is empty."""
        while heap:
            top = heap[0]
            pair = (top[3], top[4])
            live = table.get(pair, 0)
            if live <= 0 or pair in refused:
                heapq.heappop(heap)
            elif live != -top[0]:
                heapq.heapreplace(heap, key(live, pair))
            elif not result.allowed(pair, max_token_length, veto):
                refused.add(pair)
                heapq.heappop(heap)
            else:
                return pair, live
        return None

    created = 0
    while created < n_new_tokens:
        in_global = len(result.merges) < global_merges
        if in_global:
            found, lang = best(summed_heap, summed), -1
        else:
            found, lang = None, -1
            for cand in sorted(range(n_lang), key=lambda l: (-dev_len[l], l)):
                found = best(heaps[cand], counts[cand])
                if found is not None:
                    lang = cand
                    break
        if found is None:
            result.stop_reason = "no_pairs"
            break
        pair, live = found
        if live < min_frequency:
            result.stop_reason = "min_frequency"
            break
        left, right = pair
        if result.record(pair, live, lang, id_of_bytes):
            created += 1
        new_id = result.new_ids[-1]
        track_summed = len(result.merges) < global_merges  # the next merge is global too
        touched: set[tuple[int, int]] = set()
        for c in where.pop(pair, ()):
            word = words[c]
            new = merge_word(word, left, right, new_id)
            if len(new) == len(word):
                continue  # a stale index entry
            delta: dict[tuple[int, int], int] = {}
            for p in zip(word, word[1:]):
                delta[p] = delta.get(p, 0) - 1
            for p in zip(new, new[1:]):
                delta[p] = delta.get(p, 0) + 1
            for p, d in delta.items():
                if d == 0:
                    continue
                if d > 0:
                    where.setdefault(p, set()).add(c)
                    touched.add(p)
                for lang_w, w in train_w[c]:
                    table = counts[lang_w]
                    n = table.get(p, 0) + d * w
                    if n:
                        table[p] = n
                    else:
                        del table[p]
                if track_summed and total_w[c]:
                    n = summed.get(p, 0) + d * total_w[c]
                    if n:
                        summed[p] = n
                    else:
                        summed.pop(p, None)
            shrink = len(word) - len(new)
            for lang_d, w in dev_w[c]:
                dev_len[lang_d] -= w * shrink
            words[c] = new
        for p in touched:
            for l in range(n_lang):
                n = counts[l].get(p, 0)
                if n > 0:
                    heapq.heappush(heaps[l], key(n, p))
            if track_summed and summed.get(p, 0) > 0:
                heapq.heappush(summed_heap, key(summed[p], p))
        if not track_summed:
            summed.clear()
            summed_heap.clear()
    result.dev_lengths = list(dev_len)
    return result
