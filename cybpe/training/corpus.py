"""Reading a training corpus (texts or files) into ChunkCounts, in one or several processes.

Files are streamed in blocks of about ``BLOCK_CHARS`` characters, never held whole. A block is
cut just before a line that starts with a non-space character, and only where splitting the
text around the cut as one piece gives the same pieces as splitting its two halves (checked on
a window of ``CUT_WINDOW`` characters each side), so the counts do not depend on where blocks
fall, nor on the number of workers (tested against counting whole texts).
"""

from __future__ import annotations

import codecs
import functools
import glob
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Union

import regex

from cybpe.io.atomic import checked_path
from cybpe.training.counts import ChunkCounts
from cybpe.pretokenize.pattern_scanner import PatternScanner
from cybpe.pretokenize.scanner import Scanner
from cybpe.errors import CorpusError, ParameterTypeError

BLOCK_CHARS = 1 << 22  # ~4 M characters per block sent to a worker
READ_BYTES = 1 << 20
CUT_WINDOW = 512
_CUT_CANDIDATE = regex.compile(r"\n(?=\S)")

PathLike = Union[str, os.PathLike]


def files(*patterns: PathLike) -> list[Path]:
    """Expand file names and glob patterns into a sorted list of paths (for ``train``)."""
    out: list[Path] = []
    for pattern in patterns:
        pattern = checked_path(pattern, "a file name or glob pattern")
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            if any(ch in pattern for ch in "*?["):
                raise CorpusError(f"{pattern}: no file matches")
            matches = [pattern]
        out.extend(Path(m) for m in matches)
    return out


def _safe_cut(text: str, split: Callable[[str], list[str]], start: int) -> int:
    """A cut position ≥ start where splitting halves equals splitting the whole, or -1."""
    for m in _CUT_CANDIDATE.finditer(text, start):
        cut = m.end()
        lo, hi = max(0, cut - CUT_WINDOW), min(len(text), cut + CUT_WINDOW)
        if hi - cut < CUT_WINDOW // 4:
            return -1  # too close to the end of the buffer to judge; read more first
        if split(text[lo:cut]) + split(text[cut:hi]) == split(text[lo:hi]):
            return cut
    return -1


def read_blocks(
    path: PathLike, split: Callable[[str], list[str]], errors: str = "strict", block_chars: int = BLOCK_CHARS
) -> Iterator[str]:
    """Yield the text of ``path`` in blocks cut at safe places. Invalid UTF-8 raises CorpusError."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    buffer = ""
    offset = 0  # bytes read so far
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot open ({exc.strerror or exc})") from None
    with f:
        while True:
            raw = f.read(READ_BYTES)
            try:
                buffer += decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as exc:
                raise CorpusError(
                    f"{path}: invalid UTF-8 at byte offset {offset + exc.start} "
                    f"(pass errors='replace' or 'ignore' to accept it)"
                ) from None
            offset += len(raw)
            while len(buffer) >= block_chars:
                cut = _safe_cut(buffer, split, block_chars)
                if cut < 0:
                    break
                yield buffer[:cut]
                buffer = buffer[cut:]
            if not raw:
                break
    if buffer:
        yield buffer


def _count_block_of(spec: dict, specials: tuple, text: list[str]) -> Any:
    """Worker process side: the counts of one batch, as a ChunkCounter (pickles as flat byte strings)."""
    counts = ChunkCounts.__new__(ChunkCounts)
    counts.__setstate__({"spec": spec, "special_tokens": specials, "counts": {}})
    counts.update(text)
    return counts._table


def _blocks(items: Iterable[Union[str, PathLike]], split, errors: str, block_chars: int) -> Iterator[list[str]]:
    """Batches of texts of about ``block_chars`` characters; a path's blocks are yielded alone."""
    batch: list[str] = []
    size = 0
    for item in items:
        if type(item) is not str and isinstance(item, os.PathLike):
            for block in read_blocks(item, split, errors, block_chars):
                yield [block]
            continue
        if not isinstance(item, str):
            raise CorpusError(f"corpus items must be str texts or paths, not {type(item).__name__}")
        batch.append(item)
        size += len(item)
        if size >= block_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _utf8_size(batch: list[str]) -> int:
    """Bytes of a batch as UTF-8 (for progress in MB); about 1 ms per MB, a tenth of counting."""
    return sum(len(str.encode(text, "utf-8", "surrogatepass")) for text in batch)


def count_corpus(
    counts: ChunkCounts,
    items: Iterable[Union[str, PathLike]],
    *,
    workers: Optional[int] = None,
    errors: str = "strict",
    progress: Optional[Callable[[int], None]] = None,
    block_chars: int = BLOCK_CHARS,
) -> ChunkCounts:
    """Count the texts and files (``os.PathLike`` items) of ``items`` into ``counts``; returns it.

    ``workers`` > 1 counts blocks in that many threads (compiled scanners release the GIL) or,
    for regex-only pre-tokenizers, processes; the result is identical for any value.
    ``progress(n_bytes)`` is called after each block with its size in UTF-8 bytes.
    """
    blocks = _blocks(items, counts.pretokenizer.split, errors, block_chars)
    n = workers if workers is not None else 1
    if n <= 1:
        for batch in blocks:
            counts.update(batch)
            if progress:
                progress(_utf8_size(batch))
        return counts

    pre = counts.pretokenizer
    if pre.uses_scanner and isinstance(pre.scanner, (Scanner, PatternScanner)):
        # The compiled counter releases the GIL: threads share the work without pickling texts.
        def count_in_thread(batch: list[str]) -> Any:
            return counts.empty_like().update(batch)._table

        pool_type: Any = ThreadPoolExecutor
        task: Callable[[list[str]], Any] = count_in_thread
    else:
        spec, specials = counts.pretokenizer.spec(), counts.special_tokens
        pool_type, task = ProcessPoolExecutor, functools.partial(_count_block_of, spec, specials)
    with pool_type(max_workers=n) as pool:
        pending: list = []
        for batch in blocks:
            pending.append((pool.submit(task, batch), _utf8_size(batch) if progress else 0))
            while len(pending) >= 2 * n:  # bounded memory: at most 2 blocks per worker in flight
                future, size = pending.pop(0)
                counts.add_counts(future.result())
                if progress:
                    progress(size)
        for future, size in pending:
            counts.add_counts(future.result())
            if progress:
                progress(size)
    return counts
