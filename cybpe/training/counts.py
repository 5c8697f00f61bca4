"""ChunkCounts: the unique pre-tokenized chunks of a corpus with their int64 counts.

Counting is the part of training that sees the raw text; it runs anywhere (other processes,
other machines), and counts merge by addition, so training runs from the summed counts.
"""

from __future__ import annotations

import base64
import heapq
import itertools
import json
import os
import threading
import weakref
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from cybpe.io.atomic import atomic_write_text, atomic_writer, checked_path, read_json, regular_file
from cybpe.training.chunk_counter import ChunkCounter
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer, pretokenizer_from_spec
from cybpe.pretokenize.scanner_api import BaseScanner
from cybpe.pretokenize.specials import SpecialTokenSplitter, checked_special_tokens
from cybpe.errors import ConcurrentUseError, FormatError, InvalidParameterError, ParameterTypeError, describe
from cybpe.pretokenize.text import clean_surrogates
from cybpe.training import counts_file
from cybpe.training.shards import Shard, cut_splitter, read_blocks

FORMAT_NAME = "cybpe-chunk-counts"
FORMAT_VERSION = 1  # exact counts; version 2 adds "max_undercount" (approximate counts)
CAP_BLOCK_CHARS = 1 << 20  # with a memory cap, count at most this many characters between checks
CAP_BLOCK_PIECES = 1 << 18  # ... or this many pieces of a longer text (one without a safe cut)
#: Of ``max_bytes``, what the block being counted needs beside the table: reads of 1 MiB, the
#: text of a block and a little more while a cut is found, its piece ends and UTF-8 copy. Measured: 20 to
#: 23 MiB above the process before counting on 3 M distinct words, for any cap.
COUNTING_RESERVE = 28 << 20
#: A batch of texts is counted into a fresh table, then merged, once the table holds this many
#: chunks and the last batch had at least SCRATCH_REPEATS occurrences per distinct (or new)
#: chunk: a big table is slower to count into (a cache miss per occurrence) than a batch's own
#: small table plus one merge per distinct chunk, unless the batch's chunks are mostly new
#: (hence the repeat test). The measurements: docs/history.md, "Scratch tables".
SCRATCH_FROM = 1 << 16
SCRATCH_REPEATS = 4
#: Version of the pickled state (``__getstate__``); states without one are version 0.
STATE_VERSION = 1


def _add_bounds(a: Optional[int], b: Optional[int]) -> Optional[int]:
    """The bound of a sum of counts (None: unknown)."""
    return None if a is None or b is None else a + b


def _bounds_of(saved: Mapping[str, Any]) -> dict[str, Any]:
    """The undercount bounds of a saved file's metadata, as ``__setstate__`` takes them (a file
    without ``max_pair_undercount`` leaves it to ``__setstate__``'s default)."""
    bounds = {"max_undercount": saved.get("max_undercount", 0)}
    if "max_pair_undercount" in saved:
        bounds["max_pair_undercount"] = saved["max_pair_undercount"]
    return bounds


def _by_count(pair: tuple[bytes, int]) -> int:
    return pair[1]


class ChunkCounts:
    """Unique chunk (UTF-8 bytes) → count, for one pre-tokenizer and one set of special tokens.

    Build it incrementally with :meth:`update` (texts, files, Shards), add instances with
    ``+`` or ``sum([...])`` (they must share the pre-tokenizer and special tokens), pickle it
    (protocol 5 sends the arrays as out-of-band buffers), or :meth:`save` / :meth:`load` it
    (binary, or JSON for ``.json`` names). Special-token strings are cut out of the text before
    pre-tokenization and never counted.

    Bounded memory (opt-in): with ``max_unique`` (distinct chunks) or ``max_bytes`` (memory of
    the table), whenever the table grows past the cap the rarest chunks are dropped, keeping
    about half of the cap: every chunk counted fewer than ``t`` times goes, and ``t - 1`` is
    added to :attr:`max_undercount`. No chunk's count is then more than ``max_undercount``
    below its true count, and none is ever above it (lossy counting). :attr:`exact` says
    whether anything was dropped. :attr:`max_pair_undercount` bounds what training can lose:
    no byte pair's count is more than that below its count in the exact counts, at the start of
    training and after any merges applied to both alike (it is the sum, over every dropped
    occurrence, of its length in bytes minus one; None when unknown). The cap
    is checked after each block of about ``CAP_BLOCK_CHARS`` characters, so the table may pass
    it by one block's new chunks.

    ``max_bytes`` bounds the memory counting adds to the process, not only the table's: the
    table keeps to ``max_bytes - COUNTING_RESERVE`` (at least half of ``max_bytes``), leaving the
    reserve for the block being read and counted. Measured (3 M distinct words, caps of 64 and
    128 MiB): the process's peak RSS stays under its size before counting plus ``max_bytes``;
    below about 56 MiB the reserve does not fit and the peak passes the cap by up to 10 MiB.

    The counts live in a compiled :class:`~cybpe.training.chunk_counter.ChunkCounter` (bytes keys).
    When the pre-tokenizer uses a compiled scanner or a compiled pattern, texts are counted in C
    with the GIL released; otherwise the pieces of ``pretokenizer.split`` are counted in Python
    first.
    """

    def __init__(
        self,
        pretokenizer: Union[str, PreTokenizer] = "cl100k",
        special_tokens: Sequence[str] = (),
        *,
        max_unique: Optional[int] = None,
        max_bytes: Optional[int] = None,
        **pretokenizer_params: Any,
    ) -> None:
        self.pretokenizer = get_pretokenizer(pretokenizer, **pretokenizer_params)
        """The :class:`~cybpe.PreTokenizer` the chunks were split with."""
        self.special_tokens = tuple(sorted(checked_special_tokens(special_tokens)))
        """The special tokens cut out of the text before splitting (sorted)."""
        self._splitter = SpecialTokenSplitter(self.special_tokens)
        self._table = ChunkCounter()
        self._new_locks()
        self.max_undercount = 0
        """How far below the truth any kept count may be (0: exact; see ``max_unique``)."""
        self.max_pair_undercount: Optional[int] = 0
        """A bound on how far below the truth any pair count the trainer sees may be (``None``:
        unknown, from an old file)."""
        self.max_unique, self.max_bytes = _check_cap(max_unique, "max_unique"), _check_cap(max_bytes, "max_bytes")

    @property
    def exact(self) -> bool:
        """False when a memory cap dropped chunks (see :attr:`max_undercount`)."""
        return self.max_undercount == 0

    @property
    def capped(self) -> bool:
        """True when a memory cap (``max_unique`` or ``max_bytes``) is set."""
        return self.max_unique is not None or self.max_bytes is not None

    cap_block_chars = CAP_BLOCK_CHARS
    _scratch_pays = True  # whether the next batch is counted through a scratch table

    @property
    def table(self) -> ChunkCounter:
        """The compiled table holding the counts (what workers send back)."""
        return self._table

    @property
    def nbytes(self) -> int:
        """Bytes of memory the counts hold."""
        return self._table.nbytes

    def _enforce_cap(self) -> None:
        """Drop the rarest chunks when the table is past its cap (see the class docstring)."""
        size = len(self._table)
        keep = size
        if self.max_unique is not None and size > self.max_unique:
            keep = self.max_unique // 2
        budget = None if self.max_bytes is None else max(self.max_bytes - COUNTING_RESERVE, self.max_bytes // 2)
        if budget is not None:
            # the slot array's next doubling (old and new at once) counts against the budget
            held = self._table.nbytes + self._table.growth_bytes
            if held > budget:
                keep = min(keep, int(size * budget / 2 / held))
        if keep >= size:
            return
        # Keep the chunks counted more often than the keep-th most frequent one (at most keep).
        threshold = self._table.kth_largest_count(max(keep, 1)) + 1
        _, _, pair_positions = self._table.prune(threshold)
        self.max_undercount += threshold - 1
        if self.max_pair_undercount is not None:
            self.max_pair_undercount += pair_positions

    # -- locking: one writer at a time; readers see whole writing calls ------------------------
    def _new_locks(self) -> None:
        self._writer = threading.Lock()  # claimed by a writer, never waited for
        self._state = threading.Lock()   # held by a writer for its whole call and by readers
        _LIVE[id(self)] = self  # so that a forked child can replace locks held by the parent's threads

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

    def update(self, texts: Union[str, "os.PathLike[str]", Shard, Iterable[Any]]) -> "ChunkCounts":
        """Count the chunks of one text, file (``pathlib.Path``) or :class:`~cybpe.Shard`, or of
        every item of an iterable of them; files are read streaming, compressed or not (UTF-8,
        strictly: use :func:`cybpe.count` for ``errors=``). Returns self. One writer at a time:
        a second thread's update raises :class:`~cybpe.errors.ConcurrentUseError`."""
        self._begin_write()
        try:
            self._update(texts)
        finally:
            self._end_write()
        return self

    def _update(self, texts: Any) -> None:
        if isinstance(texts, (str, os.PathLike, Shard)):
            texts = [texts]
        elif isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
            raise ParameterTypeError(
                f"ChunkCounts.update() takes a str, a path or an iterable of them, not {type(texts).__name__}"
            )
        if type(texts) is list and not self.capped and all(type(t) is str for t in texts):
            self._update_texts(texts)
            return
        self._update_mixed(texts)

    def _update_mixed(self, items: Iterable[Any]) -> None:
        """Texts in batches (of at most the cap's block when capped), files block by block."""
        limit = CAP_BLOCK_CHARS if self.capped else 1 << 22
        batch: list[str] = []
        size = 0
        split = None
        for item in itertools.chain(items, [None]):
            if isinstance(item, str):
                batch.append(item)
                size += len(item)
                if size < limit:
                    continue
            if batch:
                self._update_texts(batch)
                self._enforce_cap()
                batch, size = [], 0
            if item is None or isinstance(item, str):
                continue
            if not isinstance(item, (os.PathLike, Shard)) or isinstance(item, Path) and item.is_dir():
                if isinstance(item, Path):
                    raise InvalidParameterError(f"{item}: a directory (use cybpe.count or cybpe.files)")
                raise ParameterTypeError(
                    f"ChunkCounts.update() takes str texts, file paths or Shards, not {type(item).__name__}")
            split = split or cut_splitter(self.pretokenizer, self.special_tokens)
            for block in read_blocks(item, split, block_chars=limit):
                self._update_texts([block])
                self._enforce_cap()

    def _update_texts(self, texts: Iterable[str]) -> "ChunkCounts":
        pretokenizer = self.pretokenizer
        scanner = pretokenizer.scanner if pretokenizer.uses_scanner else None
        compiled = scanner if isinstance(scanner, BaseScanner) else None
        table = self._table
        plain = not self.special_tokens
        if self.capped and type(texts) is list and any(
                isinstance(t, str) and len(t) > CAP_BLOCK_CHARS for t in texts):
            compiled_add = self._add_capped  # a long text: the cap is checked inside it
        else:
            compiled_add = table.add_text
            if compiled is not None and plain and type(texts) is list:
                try:  # one GIL-free pass; encodes all before counting
                    self._add_texts_compiled(texts, compiled)
                    return self
                except (UnicodeEncodeError, TypeError):
                    pass  # lone surrogates or a non-str item: the per-text path below says which
        for text in texts:
            if not isinstance(text, str):
                raise ParameterTypeError(
                    f"ChunkCounts.update() takes str texts, not {type(text).__name__}"
                )
            if type(text) is not str:
                text = str.__str__(text)  # a subclass's own code points, never its methods
            if compiled is not None and plain:
                try:
                    compiled_add(text, compiled)  # encodes strictly: fails before counting anything
                    continue
                except UnicodeEncodeError:
                    text = clean_surrogates(text)
            else:
                text = clean_surrogates(text)
            for part in self._splitter.ordinary_parts(text):
                if compiled is not None:
                    compiled_add(part, compiled)
                else:
                    table.add_counts(Counter(pretokenizer.split(part)))
        return self

    def _add_texts_compiled(self, texts: list[str], scanner: BaseScanner) -> None:
        """``table.add_texts``, through a fresh scratch table when that pays (see SCRATCH_FROM).

        The scratch table's chunks are merged in its first-seen order, so the table's order
        (and every count) is what counting straight into it gives. Whether the next batch
        goes through a scratch table is decided from this one: after a scratch count, by its
        occurrences per distinct chunk; after a direct count, by its occurrences per new chunk."""
        table = self._table
        if self.capped or len(table) < SCRATCH_FROM or not self._scratch_pays:
            before_len, before_total = len(table), table.total
            table.add_texts(texts, scanner)
            self._scratch_pays = _repeats_enough(table.total - before_total, len(table) - before_len)
            return
        scratch = ChunkCounter()
        scratch.add_texts(texts, scanner)
        table.merge(scratch)
        self._scratch_pays = _repeats_enough(scratch.total, len(scratch))

    def _add_capped(self, text: str, scanner: BaseScanner) -> None:
        """Count a text with the memory cap checked every CAP_BLOCK_PIECES pieces.

        Blocks are cut only where the pieces cannot change, and a text may have no such place
        (10 M words separated by spaces and "\n "): checked only between blocks, the cap let the
        table reach 512 MiB under ``max_bytes=64 MiB``. The pieces of the whole text are found
        first (exact), then counted slice by slice. Costs 8 bytes per piece of the one text, and
        a UTF-8 copy unless it is ASCII (figures in the README's "Counting at scale")."""
        if len(text) <= CAP_BLOCK_CHARS:
            self._table.add_text(text, scanner)
        else:
            self._table.add_text_sliced(text, scanner, CAP_BLOCK_PIECES, self._enforce_cap)

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
        result = self.copy()
        result += other
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
                self.max_undercount += addend.max_undercount
                self.max_pair_undercount = _add_bounds(self.max_pair_undercount, addend.max_pair_undercount)
                self._enforce_cap()
        finally:
            self._writer.release()
        return self

    def copy(self) -> "ChunkCounts":
        """An independent copy (same pre-tokenizer, special tokens, caps and counts)."""
        new = self.empty_like()
        with self._state:
            new._table = self._table.copy()
            new.max_undercount = self.max_undercount
            new.max_pair_undercount = self.max_pair_undercount
        return new

    def empty_like(self) -> "ChunkCounts":
        """No counts, the same pre-tokenizer and special tokens (for counting elsewhere, then ``+=``)."""
        new = ChunkCounts.__new__(ChunkCounts)
        new.pretokenizer = self.pretokenizer
        new.special_tokens = self.special_tokens
        new._splitter = self._splitter
        new._table = ChunkCounter()
        new.max_undercount = 0
        new.max_pair_undercount = 0
        new.max_unique, new.max_bytes = self.max_unique, self.max_bytes
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
            self._enforce_cap()
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
                or self.special_tokens != other.special_tokens
                or self.max_undercount != other.max_undercount
                or self.max_pair_undercount != other.max_pair_undercount):
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

    def with_arrays(self, fn: Callable[[memoryview, memoryview, memoryview], Any]) -> Any:
        """``fn(arena, offsets, counts)`` over the counts' own arrays (chunk ``i`` is
        ``arena[offsets[i]:offsets[i + 1]]``, counted ``counts[i]`` times; first-seen order),
        read-only and without copies, valid during the call; its result. Updates from other
        threads wait meanwhile. Training reads the chunks this way (no ``bytes`` per chunk)."""
        if not callable(fn):
            raise ParameterTypeError(f"with_arrays(fn): fn must be callable, not {type(fn).__name__}")
        with self._state:
            return self._table.with_arrays(fn)

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
        exact = "" if self.exact else f", approximate (undercount ≤ {self.max_undercount})"
        return (f"<ChunkCounts {len(self)} unique chunks, {self.total} occurrences{exact}, "
                f"{self.pretokenizer!r}>")

    # -- persistence -----------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        # The table pickles as three flat byte strings (see ChunkCounter.__reduce__), taken here
        # under the lock: the state pickles after this returns, maybe mid-update. (A table.copy()
        # here re-hashed every chunk: 0.28 s for 824 k chunks, paid at every Dask transfer.)
        with self._state:
            table = _TableSnapshot(self._table.__reduce_ex__(4))
        return {"state_version": STATE_VERSION, "spec": self.pretokenizer.spec(),
                "special_tokens": self.special_tokens, "table": table,
                "max_undercount": self.max_undercount, "max_pair_undercount": self.max_pair_undercount,
                "max_unique": self.max_unique, "max_bytes": self.max_bytes}

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
        if isinstance(table, _TableSnapshot):  # copy.copy() passes the state on unpickled
            table = table.restore()
        if not isinstance(table, ChunkCounter):
            table = ChunkCounter()
            try:
                table.add_counts(state.get("counts", {}))
            except InvalidParameterError as exc:
                raise FormatError(f"ChunkCounts state: {exc}") from None
        self._table = table
        undercount = state.get("max_undercount", 0)
        if isinstance(undercount, bool) or not isinstance(undercount, int) or undercount < 0:
            raise FormatError(f"ChunkCounts state: max_undercount must be an int >= 0, not {describe(undercount)}")
        self.max_undercount = undercount
        # Unknown (None) for approximate counts saved before the pair bound was recorded.
        pairs = state.get("max_pair_undercount", 0 if undercount == 0 else None)
        if pairs is not None and (isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 0):
            raise FormatError(
                f"ChunkCounts state: max_pair_undercount must be an int >= 0 or None, not {describe(pairs)}")
        self.max_pair_undercount = pairs
        try:
            self.max_unique = _check_cap(state.get("max_unique"), "max_unique")
            self.max_bytes = _check_cap(state.get("max_bytes"), "max_bytes")
        except InvalidParameterError as exc:
            raise FormatError(f"ChunkCounts state: {exc}") from None

    def _metadata(self) -> dict[str, Any]:
        return {"pretokenizer": self.pretokenizer.spec(), "special_tokens": list(self.special_tokens),
                "total": self.total, "max_undercount": self.max_undercount,
                "max_pair_undercount": self.max_pair_undercount}

    def save(self, path: Union[str, os.PathLike], *, format: str = "auto",
             compress: Optional[str] = None) -> None:
        """Write the counts atomically (temporary file, then rename).

        ``format="auto"``: JSON for a ``.json`` name (readable, for small counts), else the
        binary format (:mod:`cybpe.training.counts_file`; 10 M chunks in about a second).
        ``compress`` (binary only): None, ``"zstd"`` or ``"gzip"``."""
        path = checked_path(path, "ChunkCounts.save(): path")
        if not isinstance(format, str) or format not in ("auto", "binary", "json"):
            raise InvalidParameterError(f"format must be 'auto', 'binary' or 'json', not {describe(format)}")
        if format == "json" or (format == "auto" and os.fspath(path).endswith(".json")):
            if compress is not None:
                raise InvalidParameterError("compress= applies to the binary format only")
            self._save_json(path)
            return
        with atomic_writer(path) as out:
            counts_file.write_counts(out, self._table, self._metadata(), compress)

    def _save_json(self, path: Union[str, os.PathLike]) -> None:
        doc = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION if self.exact else 2,
            "pretokenizer": self.pretokenizer.spec(),
            "special_tokens": list(self.special_tokens),
            "chunks": [[base64.b64encode(c).decode("ascii"), n] for c, n in self.items()],
        }
        if not self.exact:
            doc["max_undercount"] = self.max_undercount
            doc["max_pair_undercount"] = self.max_pair_undercount
        atomic_write_text(path, json.dumps(doc, ensure_ascii=False, separators=(",", ":")))

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "ChunkCounts":
        """Read a file written by :meth:`save` (binary or JSON, told apart by its first bytes)."""
        path = checked_path(path, "ChunkCounts.load(): path")
        regular_file(path)  # a FIFO would block the open, a device never end
        try:
            with open(path, "rb") as f:
                head = f.read(len(counts_file.MAGIC))
                if counts_file.is_binary_counts(head):
                    f.seek(0)
                    table, meta = counts_file.read_counts(f, os.fspath(path))
                    return cls._from_table(table, meta, os.fspath(path))
        except FileNotFoundError:
            raise FormatError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise FormatError(f"{path}: a directory, not a chunk-counts file") from None
        except OSError as exc:
            raise FormatError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
        except TypeError:
            raise ParameterTypeError(f"ChunkCounts.load() takes a path, not {type(path).__name__}") from None
        return cls._load_json(path)

    @classmethod
    def _from_table(cls, table: ChunkCounter, meta: dict, label: str) -> "ChunkCounts":
        new = cls.__new__(cls)
        try:
            new.__setstate__({"spec": meta["pretokenizer"], "special_tokens": meta["special_tokens"],
                              "table": table, **_bounds_of(meta)})
        except FormatError as exc:  # (its subclass kept: MissingPluginError says what to install)
            if not str(exc).startswith(label):
                exc.args = (f"{label}: {str(exc).replace('ChunkCounts state: ', 'metadata: ', 1)}",)
            raise exc.with_traceback(None) from None
        except (KeyError, TypeError, ValueError, LookupError) as exc:
            raise FormatError(f"{label}: corrupt chunk-counts metadata ({exc!r})") from None
        return new

    @classmethod
    def _load_json(cls, path: Union[str, os.PathLike]) -> "ChunkCounts":
        doc = read_json(path)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise FormatError(f"{path}: not a {FORMAT_NAME} file")
        if doc.get("version") not in (1, 2):
            raise FormatError(
                f"{path}: chunk-counts version {doc.get('version')!r}; this cybpe reads versions 1 and 2"
            )
        new = cls.__new__(cls)
        try:
            spec, specials, chunks = doc["pretokenizer"], doc["special_tokens"], doc["chunks"]
            if not isinstance(spec, dict) or not isinstance(specials, list) or not isinstance(chunks, list):
                raise FormatError(f"{path}: corrupt chunk-counts file (pretokenizer, special_tokens "
                                  "or chunks of the wrong type)")
            new.__setstate__({"spec": spec, "special_tokens": specials, "counts": {}, **_bounds_of(doc)})
            pairs: list[tuple[bytes, int]] = []
            for i, entry in enumerate(chunks):
                if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str):
                    raise FormatError(f"{path}: chunk {i} is not a [base64, count] pair")
                b64, n = entry
                if not isinstance(n, int) or isinstance(n, bool) or n <= 0 or n >= 2**63:
                    raise FormatError(f"{path}: chunk {i} has count {n!r}")
                # Any bytes, the empty string included: the binary format's rule and what
                # add_counts takes, so that every ChunkCounts saves and loads back as it was.
                pairs.append((base64.b64decode(b64, validate=True), n))
            new._table.add_counts(pairs)
        except FormatError as exc:
            if str(exc).startswith(f"{path}:"):
                raise
            raise FormatError(f"{path}: {exc}") from None
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise FormatError(f"{path}: corrupt chunk-counts file ({exc!r})") from None
        return new


class _ForkedMidCall:
    """Stands in for both locks of a ChunkCounts in a child process forked while a thread of the
    parent was inside one of its calls (see :func:`_after_fork_in_child`). Every call that takes
    a lock raises ConcurrentUseError at once, instead of waiting forever for a thread that does
    not exist in the child; releasing (by the forking thread itself, if it was that one) is a
    no-op."""

    MESSAGE = ("this ChunkCounts was in use by another thread when the process forked, so in "
               "this (child) process its counts may be half-updated and its locks are held by a "
               "thread that does not exist here; fork before counting, or copy() it first")

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        raise ConcurrentUseError(self.MESSAGE)

    def release(self) -> None:
        pass

    def locked(self) -> bool:
        return True

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        return None


#: Every ChunkCounts alive, by id (weakly: ChunkCounts is unhashable, having __eq__).
_LIVE: "weakref.WeakValueDictionary[int, ChunkCounts]" = weakref.WeakValueDictionary()
_FORKED_MID_CALL = _ForkedMidCall()


def _after_fork_in_child() -> None:
    """Runs in a forked child: a ChunkCounts that no thread was using gets fresh locks (the
    parent's are copies, possibly in an odd state); one that a thread was inside (updating,
    reading, saving) can be neither trusted nor waited for, so its calls raise
    ConcurrentUseError from now on."""
    for counts in list(_LIVE.values()):
        try:
            busy = counts._writer.locked() or counts._state.locked()
        except AttributeError:  # (a half-built instance)
            continue
        if busy:
            counts._writer = counts._state = _FORKED_MID_CALL  # type: ignore[assignment]
        else:
            counts._writer = threading.Lock()
            counts._state = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _TableSnapshot:
    """A ChunkCounter's arrays taken at one moment (``ChunkCounter.__reduce_ex__``): pickles as
    that table (as out-of-band PickleBuffers under protocol 5) without copying it again."""

    __slots__ = ("_reduced",)

    def __init__(self, reduced: tuple) -> None:
        self._reduced = reduced

    def __reduce_ex__(self, protocol: int) -> tuple:
        rebuild, (scanner, arena, offsets, counts, byteorder) = self._reduced
        if protocol >= 5:
            import pickle

            arena, offsets, counts = (pickle.PickleBuffer(arena), pickle.PickleBuffer(offsets),
                                      pickle.PickleBuffer(counts))
        return rebuild, (scanner, arena, offsets, counts, byteorder)

    def restore(self) -> ChunkCounter:
        rebuild, args = self._reduced
        return rebuild(*args)


def _repeats_enough(occurrences: int, chunks: int) -> bool:
    """Whether a batch's occurrences per chunk (distinct, or new) make a scratch table pay."""
    return occurrences >= SCRATCH_REPEATS * max(chunks, 1)


def _check_cap(value: Optional[int], name: str) -> Optional[int]:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ParameterTypeError(f"{name} must be an integer ≥ 2 or None, not {describe(value)}")
    if value is not None and value < 2:
        raise InvalidParameterError(f"{name} must be an integer ≥ 2 or None, got {value}")
    return value
