"""ChunkCounts: the unique pre-tokenized chunks of a corpus with their int64 counts.

Counting is the part of training that sees the raw text; it runs anywhere (other processes,
other machines), and counts merge by addition, so training runs from the summed counts.
"""

from __future__ import annotations

import base64
import heapq
import json
import os
from collections import Counter
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

from cybpe.io.atomic import atomic_write_text
from cybpe.training.chunk_counter import ChunkCounter
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer, pretokenizer_from_spec
from cybpe.pretokenize.scanner_api import BaseScanner
from cybpe.pretokenize.specials import SpecialTokenSplitter
from cybpe.errors import FormatError, InvalidParameterError
from cybpe.pretokenize.text import clean_surrogates

FORMAT_NAME = "cybpe-chunk-counts"
FORMAT_VERSION = 1


def _by_count(pair: tuple[bytes, int]) -> int:
    return pair[1]


class ChunkCounts:
    """Unique chunk (UTF-8 bytes) → count, for one pre-tokenizer and one set of special tokens.

    Build it incrementally with :meth:`update`, add instances with ``+`` or ``sum([...])``
    (they must share the pre-tokenizer and special tokens), pickle it, or :meth:`save` /
    :meth:`load` it. Special-token strings are cut out of the text before pre-tokenization
    and never counted.

    The counts live in a compiled :class:`~cybpe.training.chunk_counter.ChunkCounter` (bytes keys).
    When the pre-tokenizer uses a compiled scanner or a compiled pattern, texts are counted in C
    with the GIL released; otherwise the pieces of ``pretokenizer.split`` are counted in Python
    first.
    """

    def __init__(
        self,
        pretokenizer: Union[str, PreTokenizer] = "cl100k",
        special_tokens: Sequence[str] = (),
        **pretokenizer_params: Any,
    ) -> None:
        self.pretokenizer = get_pretokenizer(pretokenizer, **pretokenizer_params)
        self.special_tokens = tuple(sorted(set(special_tokens)))
        self._splitter = SpecialTokenSplitter(self.special_tokens)
        self._table = ChunkCounter()

    # -- building --------------------------------------------------------------------------
    def update(self, texts: Union[str, Iterable[str]]) -> "ChunkCounts":
        """Count the chunks of one text or of every text of an iterable; returns self."""
        if isinstance(texts, str):
            texts = (texts,)
        pretokenizer = self.pretokenizer
        scanner = pretokenizer.scanner if pretokenizer.uses_scanner else None
        compiled = scanner if isinstance(scanner, BaseScanner) else None
        table = self._table
        plain = not self.special_tokens
        if compiled is not None and plain and type(texts) is list:
            try:  # one GIL-free pass; encodes all before counting
                table.add_texts(texts, compiled)
                return self
            except (UnicodeEncodeError, TypeError):
                pass  # lone surrogates or a non-str item: the per-text path below says which
        for text in texts:
            if not isinstance(text, str):
                raise InvalidParameterError(
                    f"ChunkCounts.update() takes str texts, not {type(text).__name__}"
                )
            if compiled is not None and plain:
                try:
                    table.add_text(text, compiled)  # encodes strictly: fails before counting anything
                    continue
                except UnicodeEncodeError:
                    text = clean_surrogates(text)
            else:
                text = clean_surrogates(text)
            for part in self._splitter.ordinary_parts(text):
                if compiled is not None:
                    table.add_text(part, compiled)
                else:
                    table.add_counts(Counter(pretokenizer.split(part)))
        return self

    def _check_compatible(self, other: "ChunkCounts") -> None:
        if self.pretokenizer.spec() != other.pretokenizer.spec():
            raise InvalidParameterError(
                f"cannot add chunk counts of different pre-tokenizers: "
                f"{self.pretokenizer!r} and {other.pretokenizer!r}"
            )
        if self.special_tokens != other.special_tokens:
            raise InvalidParameterError("cannot add chunk counts with different special tokens")

    def __add__(self, other: Any) -> "ChunkCounts":
        if isinstance(other, int) and other == 0:  # so that sum([...]) works
            return self.copy()
        if not isinstance(other, ChunkCounts):
            return NotImplemented
        self._check_compatible(other)
        result = self.copy()
        result._table.merge(other._table)
        return result

    __radd__ = __add__

    def __iadd__(self, other: "ChunkCounts") -> "ChunkCounts":
        if not isinstance(other, ChunkCounts):
            return NotImplemented
        self._check_compatible(other)
        self._table.merge(other._table)
        return self

    def copy(self) -> "ChunkCounts":
        new = self.empty_like()
        new._table = self._table.copy()
        return new

    def empty_like(self) -> "ChunkCounts":
        """No counts, the same pre-tokenizer and special tokens (for counting elsewhere, then ``+=``)."""
        new = ChunkCounts.__new__(ChunkCounts)
        new.pretokenizer = self.pretokenizer
        new.special_tokens = self.special_tokens
        new._splitter = self._splitter
        new._table = ChunkCounter()
        return new

    def add_counts(self, counts: Union[ChunkCounter, Mapping[str, int], Mapping[bytes, int]]) -> None:
        """Add counts produced elsewhere with the same pre-tokenizer: a ChunkCounter (what the
        corpus workers send) or a mapping of chunk (str or UTF-8 bytes) to count ≥ 0."""
        if isinstance(counts, ChunkCounter):
            self._table.merge(counts)
        else:
            try:
                self._table.add_counts(counts)
            except ValueError as exc:
                raise InvalidParameterError(str(exc)) from None

    # -- reading ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._table)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ChunkCounts)
            and self.pretokenizer.spec() == other.pretokenizer.spec()
            and self.special_tokens == other.special_tokens
            and self._table == other._table
        )

    def items(self) -> Iterator[tuple[bytes, int]]:
        """``(chunk bytes, count)`` in a deterministic order (sorted by bytes)."""
        return iter(self._table.items(sort=True))

    def sorted_arrays(self):
        """``(chunks, counts)`` sorted by bytes: a list of bytes and an int64 numpy array (for training)."""
        return self._table.sorted_arrays()

    def most_common(self, n: Optional[int] = None) -> list[tuple[bytes, int]]:
        """The ``n`` most frequent chunks (all when None), ties in first-counted order."""
        pairs = self._table.items()
        if n is None:
            return sorted(pairs, key=_by_count, reverse=True)
        return heapq.nlargest(n, pairs, key=_by_count)

    @property
    def total(self) -> int:
        """Chunk occurrences counted (the sum of all counts)."""
        return self._table.total

    def __repr__(self) -> str:
        return f"<ChunkCounts {len(self)} unique chunks, {self.total} occurrences, {self.pretokenizer!r}>"

    # -- persistence -----------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        # The table pickles as three flat byte strings (see ChunkCounter.__reduce__).
        return {"spec": self.pretokenizer.spec(), "special_tokens": self.special_tokens,
                "table": self._table}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Accepts this version's state and the older ``"counts": {chunk str: count}`` one."""
        self.pretokenizer = pretokenizer_from_spec(state["spec"])
        self.special_tokens = tuple(state["special_tokens"])
        self._splitter = SpecialTokenSplitter(self.special_tokens)
        table = state.get("table")
        if not isinstance(table, ChunkCounter):
            table = ChunkCounter()
            table.add_counts(state.get("counts", {}))
        self._table = table

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write a versioned JSON file atomically (temporary file, then rename)."""
        doc = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "pretokenizer": self.pretokenizer.spec(),
            "special_tokens": list(self.special_tokens),
            "chunks": [[base64.b64encode(c).decode("ascii"), n] for c, n in self.items()],
        }
        atomic_write_text(path, json.dumps(doc, ensure_ascii=False, separators=(",", ":")))

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "ChunkCounts":
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except FileNotFoundError:
            raise FormatError(f"{path}: no such file") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise FormatError(f"{path}: not a chunk-counts file ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise FormatError(f"{path}: not a {FORMAT_NAME} file")
        if doc.get("version") != FORMAT_VERSION:
            raise FormatError(
                f"{path}: chunk-counts version {doc.get('version')!r}; this cybpe reads version {FORMAT_VERSION}"
            )
        new = cls.__new__(cls)
        try:
            new.__setstate__({"spec": doc["pretokenizer"], "special_tokens": doc["special_tokens"], "counts": {}})
            pairs: list[tuple[bytes, int]] = []
            for i, (b64, n) in enumerate(doc["chunks"]):
                if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
                    raise FormatError(f"{path}: chunk {i} has count {n!r}")
                chunk = base64.b64decode(b64, validate=True)
                chunk.decode("utf-8")  # chunks are whole UTF-8 text pieces
                pairs.append((chunk, n))
            new._table.add_counts(pairs)
        except FormatError:
            raise
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise FormatError(f"{path}: corrupt chunk-counts file ({exc!r})") from None
        return new
