"""A language-balanced training sample from a mixed corpus with a per-document language index.

The index is a TSV file with the columns ``offset``, ``bytes`` (the UTF-8 byte range of each
document in the corpus) and ``lang`` (the shared training corpus's ``documents.tsv.xz`` is one).
For each language kept:

* whole documents in corpus order until the language has ``per_language`` bytes (the last one
  may overshoot by less than one document);
* a language with less text than that is up-sampled: its documents are repeated, whole copies
  first and then a prefix of the documents again, up to ``per_language`` bytes but at most
  ``max_repeat`` times its own size (the cap: a language with 5 kB never passes for 1.5 MB of
  text).

The result says, per language, the bytes available, the bytes taken once and the bytes in the
sample after up-sampling, so the mix a tokenizer was trained on can be printed beside it.

Thread safety: the functions keep no state.
"""

from __future__ import annotations

import lzma
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from cybpe.errors import InvalidParameterError, describe


@dataclass
class BalancedSample:
    """``texts``: per language, the documents of the sample (repeats included); ``available``,
    ``unique`` and ``sampled``: per language, UTF-8 bytes in the corpus, taken once, and in the
    sample; ``repeat``: ``sampled / unique``."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    available: dict[str, int] = field(default_factory=dict)
    unique: dict[str, int] = field(default_factory=dict)
    sampled: dict[str, int] = field(default_factory=dict)
    per_language: int = 0
    max_repeat: float = 1.0

    @property
    def repeat(self) -> dict[str, float]:
        return {lang: self.sampled[lang] / self.unique[lang] for lang in self.sampled if self.unique[lang]}

    def mix(self) -> dict[str, int]:
        """UTF-8 bytes per language in the sample, largest first (what the report prints)."""
        return dict(sorted(self.sampled.items(), key=lambda kv: -kv[1]))

    def table(self) -> str:
        """A plain-text table: language, available, taken, sampled, repeat."""
        lines = [f"{'lang':10s} {'available':>12s} {'taken':>12s} {'sampled':>12s} {'repeat':>7s}"]
        for lang in sorted(self.sampled, key=lambda l: -self.sampled[l]):
            lines.append(f"{lang:10s} {self.available[lang]:>12,} {self.unique[lang]:>12,} {self.sampled[lang]:>12,} "
                         f"{self.sampled[lang] / max(1, self.unique[lang]):>7.2f}")
        lines.append(f"{'all':10s} {sum(self.available.values()):>12,} {sum(self.unique.values()):>12,} "
                     f"{sum(self.sampled.values()):>12,}")
        return "\n".join(lines)


def _open(path: Path, mode: str):
    return lzma.open(path, mode) if str(path).endswith(".xz") else open(path, mode)


def read_index(index: Path) -> list[tuple[int, int, str]]:
    """``(offset, bytes, lang)`` of every document of a ``documents.tsv(.xz)`` index."""
    rows = []
    with _open(index, "rt") as f:
        header = f.readline().rstrip("\n").split("\t")
        try:
            at, size, lang = header.index("offset"), header.index("bytes"), header.index("lang")
        except ValueError:
            raise InvalidParameterError(f"{index}: an index needs the columns offset, bytes and lang "
                                        f"(found {', '.join(header)})") from None
        for line in f:
            cols = line.rstrip("\n").split("\t")
            rows.append((int(cols[at]), int(cols[size]), cols[lang]))
    return rows


def default_index(corpus: Path) -> Optional[Path]:
    """``documents.tsv.xz`` or ``documents.tsv`` beside ``corpus``, if there."""
    for name in ("documents.tsv.xz", "documents.tsv"):
        if (Path(corpus).parent / name).is_file():
            return Path(corpus).parent / name
    return None


def balanced_sample(corpus: Path, per_language: int, *, index: Optional[Path] = None,
                    languages: Optional[Sequence[str]] = None, max_repeat: float = 4.0) -> BalancedSample:
    """The balanced sample of ``corpus`` (module docstring): ``per_language`` UTF-8 bytes per
    language (``languages``: those only, in that order; default every language of the index),
    small languages up-sampled to at most ``max_repeat`` times their own text."""
    if isinstance(per_language, bool) or not isinstance(per_language, int) or per_language <= 0:
        raise InvalidParameterError(f"per_language must be an int > 0 (bytes), not {describe(per_language)}")
    if isinstance(max_repeat, bool) or not isinstance(max_repeat, (int, float)) or not max_repeat >= 1:
        raise InvalidParameterError(f"max_repeat must be a number >= 1, not {describe(max_repeat)}")
    index = Path(index) if index is not None else default_index(Path(corpus))
    if index is None or not index.is_file():
        raise InvalidParameterError(f"{corpus}: no documents.tsv(.xz) index beside it; give the index")
    rows = read_index(index)
    wanted = list(dict.fromkeys(languages)) if languages is not None else list(dict.fromkeys(r[2] for r in rows))
    keep = set(wanted)
    taken: dict[str, list[tuple[int, int]]] = {lang: [] for lang in wanted}
    sample = BalancedSample(per_language=per_language, max_repeat=float(max_repeat))
    sample.available = {lang: 0 for lang in wanted}
    sample.unique = {lang: 0 for lang in wanted}
    for offset, size, lang in rows:
        if lang not in keep:
            continue
        sample.available[lang] += size
        if sample.unique[lang] < per_language:
            taken[lang].append((offset, size))
            sample.unique[lang] += size
    with _open(Path(corpus), "rb") as f:
        data = f.read()
    for lang in wanted:
        docs = [data[o:o + n].decode("utf-8", "replace") for o, n in taken[lang]]
        sizes = [n for _, n in taken[lang]]
        have = sample.unique[lang]
        target = min(per_language, math.floor(have * max_repeat)) if have else 0
        out = list(docs)
        total = have
        while total < target and docs:   # whole copies, then a prefix of the documents again
            for doc, n in zip(docs, sizes):
                if total >= target:
                    break
                out.append(doc)
                total += n
        sample.texts[lang] = out
        sample.sampled[lang] = total
    return sample
