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
the summed counts of all languages. ``window=W`` is the paper's moving-window variant: a language
that served more than ``alpha / L`` of the last ``W`` parity choices (``count * L > alpha * W``;
the paper's defaults are W=100, alpha=2) is asked only after every language within its share
(the paper's code has no answer when every language is over its share, possible for alpha < 1;
and with global merges on it divides by L + 1, counting its summed column as a language: here L
is always the number of languages). Summed-count merges do not enter the window.
A language whose training data has no pair left is passed over (the next language is asked; the
paper's code stops there instead); training stops when no language has one, or when the chosen
language's best count is below ``min_frequency`` (as the paper's code).

The loop is compiled (``parity_merge.pyx``, its data structures and their reasons there);
``cybpe.reference.parity`` is the slow definition the tests compare with.

Thread safety: :class:`ParallelSet` is immutable (safe to share); the functions keep no state.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from cybpe.errors import InvalidParameterError, ParameterTypeError, TrainingError, describe
from cybpe.training.parity_merge import ParityTrainer
from cybpe.training.trainer import TIE_BREAKS, check_rules, huggingface_byte_order

Veto = Callable[[bytes, bytes], object]
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class ParallelSet:
    """A parallel development set for parity-aware training: one text per language, line-aligned.

    ``texts``: ``{language: text}``, every text with the same number of lines (line ``i`` of each
    translates line ``i`` of the others). The order of the mapping is the order ties between
    languages are broken in. ``global_merges``: the hybrid variant's number of leading ordinary
    (summed-count) merges; 0 is the classic algorithm. ``window``: the moving-window variant's
    number of recent parity choices (None: off; the paper uses 100); a language that served more
    than ``alpha / L`` of them (L languages) is asked only after the others (the paper's
    ``alpha`` is 2).

    Immutable; safe to share between threads.
    """

    __slots__ = ("_texts", "_global_merges", "_window", "_alpha")

    def __init__(self, texts: Mapping[str, str], *, global_merges: int = 0,
                 window: Optional[int] = None, alpha: float = 2.0) -> None:
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
        self._window, self._alpha = check_window(window, alpha)
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

    @property
    def window(self) -> Optional[int]:
        """The moving-window variant's number of recent choices; None when it is off."""
        return self._window

    @property
    def alpha(self) -> float:
        """The moving-window variant's share factor: at most ``alpha / L`` of the window each."""
        return self._alpha

    def __repr__(self) -> str:
        window = "" if self._window is None else f", window={self._window}, alpha={self._alpha}"
        return f"ParallelSet({len(self._texts)} languages, global_merges={self._global_merges}{window})"


def check_window(window: object, alpha: object) -> tuple[Optional[int], float]:
    """The moving-window settings, validated: ``(window or None, alpha as a float)``."""
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or not 1 <= window <= _INT32_MAX):
        raise InvalidParameterError(f"window must be None or an int in [1, 2**31 - 1], not {describe(window)}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha <= 0:
        raise InvalidParameterError(f"alpha must be a finite number > 0, not {describe(alpha)}")
    return window, float(alpha)


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
        if isinstance(weights, np.ndarray):
            if weights.ndim != 1 or (weights.dtype.kind not in "iu" and len(weights)):
                raise ParameterTypeError(f"weights must be integers, not an array of {weights.dtype}")
            if len(weights) and int(weights.min()) <= 0:
                raise InvalidParameterError("every weight must be > 0")
            continue
        for w in weights:
            if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, np.integer)):
                raise ParameterTypeError(f"weights must be integers, not {describe(w)}")
            if w <= 0:
                raise InvalidParameterError("every weight must be > 0")
    for name, value in (("n_new_tokens", n_new_tokens), ("min_frequency", min_frequency),
                        ("global_merges", global_merges)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParameterTypeError(f"{name} must be an int, not {describe(value)}")
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
                        tie_break: str = "ids", min_frequency: int = 0, global_merges: int = 0,
                        max_token_length: Optional[int] = None, veto: Optional[Veto] = None,
                        window: Optional[int] = None, alpha: float = 2.0,
                        budget_language: Optional[int] = None, budget_limits: Optional[Sequence[int]] = None,
                        budget_summed: bool = True) -> ParityMergeResult:
    """Learn parity-aware merges (module docstring) with the compiled loop. ``train[l]``/``dev[l]``:
    language ``l``'s ``(chunks, weights)``; ``tie_break``: ``"ids"`` or ``"huggingface"``, as
    ``train()``. Same result as ``cybpe.reference.parity.reference_parity_merges`` with
    ``tie_key=tie_key_for(tie_break)``.

    ``budget_language``/``budget_limits``: the cost budget of :mod:`cybpe.training.parity_budget`
    (after ``k`` merges, while that language's dev length is above ``budget_limits[k]``, the last
    limit for later ``k``, the merge is the summed counts' best pair, or with ``budget_summed``
    false that language's own best pair)."""
    check_parity_inputs(train, dev, n_new_tokens, min_frequency, global_merges)
    if tie_break not in TIE_BREAKS:
        raise InvalidParameterError(f"tie_break must be 'ids' or 'huggingface', not {describe(tie_break)}")
    limit = check_rules(max_token_length, veto)
    window, alpha = check_window(window, alpha)
    if n_new_tokens > _INT32_MAX - 256:
        raise InvalidParameterError(f"n_new_tokens must be at most {_INT32_MAX - 256}; got {n_new_tokens}")
    if min_frequency > _INT64_MAX:
        raise InvalidParameterError(f"min_frequency must be below 2**63; got {min_frequency}")
    chunks, csr, dev_len = _unique_chunks(train, dev)
    byte_order = huggingface_byte_order() if tie_break == "huggingface" else list(range(256))
    trainer = ParityTrainer()
    if budget_language is not None:
        if not 0 <= budget_language < len(train) or not budget_limits:
            raise InvalidParameterError("budget_language must index a language and budget_limits be non-empty")
        trainer.set_budget(budget_language, np.asarray(budget_limits, dtype=np.int64), bool(budget_summed))
    trainer.load(chunks, *csr, dev_len, byte_order, n_new_tokens, min_frequency,
                 min(global_merges, _INT64_MAX), limit, veto, window or 0, alpha)
    trainer.run()
    merges, new_ids, counts, token_bytes, chosen, lengths, stop = trainer.result()
    return ParityMergeResult(merges=merges, new_ids=new_ids, counts=counts, token_bytes=token_bytes,
                             chosen=chosen, dev_lengths_start=dev_len, dev_lengths=lengths,
                             stop_reason=stop)


def _unique_chunks(train: Sequence[Counts], dev: Sequence[Counts]) -> tuple[list[bytes], list, list[int]]:
    """Every chunk of two or more bytes once, with its training and its dev weights per language as
    CSR arrays ``(train_start, train_lang, train_weight, dev_start, dev_lang, dev_weight)``, and the
    dev lengths (in bytes, every chunk counted). Refuses counts that could overflow int64."""
    index: dict[bytes, int] = {}
    add = index.setdefault
    csr: list = []
    dev_len: list[int] = []
    pair_total = 0   # every count the loop keeps is at most this
    entries = []
    for which, table in ((0, train), (1, dev)):
        ids: list[int] = []
        langs: list[int] = []
        weights: list[int] = []
        for lang, (lang_chunks, lang_weights) in enumerate(table):
            w = lang_weights.tolist() if isinstance(lang_weights, np.ndarray) else [int(x) for x in lang_weights]
            if not all(isinstance(chunk, bytes) for chunk in lang_chunks):
                bad = next(chunk for chunk in lang_chunks if not isinstance(chunk, bytes))
                raise ParameterTypeError(f"chunks must be bytes, not {type(bad).__name__}")
            lengths = [len(chunk) for chunk in lang_chunks]
            if which:
                dev_len.append(sum(map(operator.mul, w, lengths)))
            else:
                pair_total += sum(map(operator.mul, w, [max(n - 1, 0) for n in lengths]))
            keep = [k for k, n in enumerate(lengths) if n >= 2]
            ids += [add(lang_chunks[k], len(index)) for k in keep]
            langs += [lang] * len(keep)
            weights += [w[k] for k in keep]
        entries.append((ids, langs, weights))
    if pair_total > _INT64_MAX or any(n > _INT64_MAX for n in dev_len):
        raise TrainingError("pair counts or dev lengths would overflow int64; use smaller weights")
    for ids, langs, weights in entries:
        chunk_of = np.array(ids, dtype=np.int64)
        order = np.argsort(chunk_of, kind="stable")   # group the entries by chunk
        start = np.zeros(len(index) + 1, dtype=np.int64)
        start[1:] = np.cumsum(np.bincount(chunk_of, minlength=len(index)))
        csr += [start, np.array(langs, dtype=np.int32)[order], np.array(weights, dtype=np.int64)[order]]
    return list(index), csr, dev_len
