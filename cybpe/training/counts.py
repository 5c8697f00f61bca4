"""ChunkCounts: the unique pre-tokenized chunks of a corpus with their int64 counts.

Counting is the part of training that sees the raw text; it runs anywhere (other processes,
other machines), and counts merge by addition, so training runs from the summed counts.
"""

from __future__ import annotations

import base64
import heapq
import json
import os
import threading
from collections import Counter
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

from cybpe.io.atomic import atomic_write_text, read_json
from cybpe.training.chunk_counter import ChunkCounter
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer, pretokenizer_from_spec
from cybpe.pretokenize.pattern_scanner import PatternScanner
from cybpe.pretokenize.scanner import Scanner
from cybpe.pretokenize.specials import SpecialTokenSplitter, checked_special_tokens
from cybpe.errors import ConcurrentUseError, FormatError, InvalidParameterError, ParameterTypeError
from cybpe.pretokenize.text import clean_surrogates

FORMAT_NAME = "cybpe-chunk-counts"
FORMAT_VERSION = 1
#: Version of the pickled state (``__getstate__``); states without one are version 0.
STATE_VERSION = 1


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
        self.special_tokens = tuple(sorted(checked_special_tokens(special_tokens)))
        self._splitter = SpecialTokenSplitter(self.special_tokens)
        self._table = ChunkCounter()
        self._new_locks()

    # -- locking: one writer at a time; readers see whole writing calls ------------------------
    def _new_locks(self) -> None:
        self._writer = threading.Lock()  # claimed by a writer, never waited for
        self._state = threading.Lock()   # held by a writer for its whole call and by readers

    def _begin_write(self) -> None:
        if not self._writer.acquire(blocking=False):
            raise ConcurrentUseError(
                "this ChunkCounts is being filled by another thread; count in separate "
                "ChunkCounts (empty_like()) and add them up"
            )
        self._state.acquire()

    def _end_write(self) -> None:
        self._state.release()
        self._writer.release()

    # -- building --------------------------------------------------------------------------
    def update(self, texts: Union[str, Iterable[str]]) -> "ChunkCounts":
        """Count the chunks of one text or of every text of an iterable; returns self."""
        self._begin_write()
        try:
            self._update(texts)
        finally:
            self._end_write()
        return self

    def _update(self, texts: Union[str, Iterable[str]]) -> None:
        if isinstance(texts, str):
            texts = (texts,)
        elif isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
            raise ParameterTypeError(
                f"ChunkCounts.update() takes a str or an iterable of str, not {type(texts).__name__}"
            )
        pretokenizer = self.pretokenizer
        scanner = pretokenizer.scanner if pretokenizer.uses_scanner else None
        kind = scanner.kind if isinstance(scanner, Scanner) else None
        matcher = scanner if isinstance(scanner, PatternScanner) else None
        table = self._table
        plain = not self.special_tokens
        if (kind is not None or matcher is not None) and plain and type(texts) is list:
            try:  # one GIL-free pass; encodes all before counting
                if kind is not None:
                    table.add_texts(texts, kind)
                else:
                    table.add_texts_matched(texts, matcher)
                return
            except (UnicodeEncodeError, TypeError):
                pass  # lone surrogates or a non-str item: the per-text path below says which
        for text in texts:
            if not isinstance(text, str):
                raise ParameterTypeError(
                    f"ChunkCounts.update() takes str texts, not {type(text).__name__}"
                )
            if type(text) is not str:
                text = str.__str__(text)  # a subclass's own code points, never its methods
            if kind is not None and plain:
                try:
                    table.add_text(text, kind)  # encodes strictly: fails before counting anything
                    continue
                except UnicodeEncodeError:
                    text = clean_surrogates(text)
            else:
                text = clean_surrogates(text)
            for part in self._splitter.ordinary_parts(text):
                if kind is not None:
                    table.add_text(part, kind)
                elif matcher is not None:
                    table.add_texts_matched([part], matcher)
                else:
                    table.add_counts(Counter(pretokenizer.split(part)))

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
        with other._state:
            result._table.merge(other._table)
        return result

    __radd__ = __add__

    def __iadd__(self, other: "ChunkCounts") -> "ChunkCounts":
        if not isinstance(other, ChunkCounts):
            return NotImplemented
        self._check_compatible(other)
        addend = other.copy() if other is self else other
        if not self._writer.acquire(blocking=False):
            raise ConcurrentUseError("this ChunkCounts is being filled by another thread")
        try:
            # both state locks in a fixed order, so that a += b and b += a cannot deadlock
            first, second = (self, addend) if id(self) < id(addend) else (addend, self)
            with first._state, second._state:
                self._table.merge(addend._table)
        finally:
            self._writer.release()
        return self

    def copy(self) -> "ChunkCounts":
        new = self.empty_like()
        with self._state:
            new._table = self._table.copy()
        return new

    def empty_like(self) -> "ChunkCounts":
        """No counts, the same pre-tokenizer and special tokens (for counting elsewhere, then ``+=``)."""
        new = ChunkCounts.__new__(ChunkCounts)
        new.pretokenizer = self.pretokenizer
        new.special_tokens = self.special_tokens
        new._splitter = self._splitter
        new._table = ChunkCounter()
        new._new_locks()
        return new

    def add_counts(self, counts: Union[ChunkCounter, Mapping[str, int], Mapping[bytes, int]]) -> None:
        """Add counts produced elsewhere with the same pre-tokenizer: a ChunkCounter (what the
        corpus workers send) or a mapping of chunk (str or UTF-8 bytes) to an integer count ≥ 0.
        Everything is checked before anything is added."""
        self._begin_write()
        try:
            if isinstance(counts, ChunkCounter):
                self._table.merge(counts)
            else:
                self._table.add_counts(counts)
        finally:
            self._end_write()

    # -- reading ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._table)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChunkCounts):
            return False
        if other is self:
            return True
        if (self.pretokenizer.spec() != other.pretokenizer.spec()
                or self.special_tokens != other.special_tokens):
            return False
        first, second = (self, other) if id(self) < id(other) else (other, self)
        with first._state, second._state:  # in a fixed order: a == b and b == a cannot deadlock
            return bool(self._table == other._table)

    def items(self) -> Iterator[tuple[bytes, int]]:
        """``(chunk bytes, count)`` in a deterministic order (sorted by bytes)."""
        with self._state:
            return iter(self._table.items(sort=True))

    def sorted_arrays(self):
        """``(chunks, counts)`` sorted by bytes: a list of bytes and an int64 numpy array (for training)."""
        with self._state:
            return self._table.sorted_arrays()

    def most_common(self, n: Optional[int] = None) -> list[tuple[bytes, int]]:
        """The ``n`` most frequent chunks (all when None), ties in first-counted order."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
            raise ParameterTypeError(f"most_common(n): n must be an int or None, not {type(n).__name__}")
        with self._state:
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
        with self._state:  # a copy: the table pickles after this returns, maybe mid-update
            table = self._table.copy()
        return {"state_version": STATE_VERSION, "spec": self.pretokenizer.spec(),
                "special_tokens": self.special_tokens, "table": table}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Accepts this version's state and the older ``"counts": {chunk str: count}`` one;
        anything else (a newer cybpe's state, a damaged one) is a :class:`FormatError`."""
        if not isinstance(state, dict):
            raise FormatError(f"ChunkCounts state must be a dict, not {type(state).__name__}")
        version = state.get("state_version", 0)
        if not isinstance(version, int) or version > STATE_VERSION:
            raise FormatError(
                f"ChunkCounts state version {version!r}: this cybpe reads versions 0..{STATE_VERSION}"
                " (pickled by a newer cybpe?)"
            )
        spec = state.get("spec")
        if not isinstance(spec, dict):
            raise FormatError("ChunkCounts state has no pre-tokenizer spec")
        self.pretokenizer = pretokenizer_from_spec(spec)
        try:
            self.special_tokens = tuple(sorted(checked_special_tokens(state.get("special_tokens", ()))))
        except InvalidParameterError as exc:
            raise FormatError(f"ChunkCounts state: {exc}") from None
        self._splitter = SpecialTokenSplitter(self.special_tokens)
        self._new_locks()
        table = state.get("table")
        if not isinstance(table, ChunkCounter):
            table = ChunkCounter()
            try:
                table.add_counts(state.get("counts", {}))
            except InvalidParameterError as exc:
                raise FormatError(f"ChunkCounts state: {exc}") from None
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
        """Read a file written by :meth:`save`; anything else is a :class:`FormatError`
        naming the file."""
        doc = read_json(path)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise FormatError(f"{path}: not a {FORMAT_NAME} file")
        if doc.get("version") != FORMAT_VERSION:
            raise FormatError(
                f"{path}: chunk-counts version {doc.get('version')!r}; this cybpe reads version {FORMAT_VERSION}"
            )
        new = cls.__new__(cls)
        try:
            spec, specials, chunks = doc["pretokenizer"], doc["special_tokens"], doc["chunks"]
            if not isinstance(spec, dict) or not isinstance(specials, list) or not isinstance(chunks, list):
                raise FormatError(f"{path}: corrupt chunk-counts file (pretokenizer, special_tokens "
                                  "or chunks of the wrong type)")
            new.__setstate__({"spec": spec, "special_tokens": specials, "counts": {}})
            pairs: list[tuple[bytes, int]] = []
            for i, entry in enumerate(chunks):
                if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str):
                    raise FormatError(f"{path}: chunk {i} is not a [base64, count] pair")
                b64, n = entry
                if not isinstance(n, int) or isinstance(n, bool) or n <= 0 or n >= 2**63:
                    raise FormatError(f"{path}: chunk {i} has count {n!r}")
                chunk = base64.b64decode(b64, validate=True)
                chunk.decode("utf-8")  # chunks are whole UTF-8 text pieces
                pairs.append((chunk, n))
            new._table.add_counts(pairs)
        except FormatError as exc:
            if str(exc).startswith(f"{path}:"):
                raise
            raise FormatError(f"{path}: {exc}") from None
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise FormatError(f"{path}: corrupt chunk-counts file ({exc!r})") from None
        return new
