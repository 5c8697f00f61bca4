"""Reading a training corpus (texts, files, URLs, shards) into ChunkCounts, in one or several
threads or processes; the public :func:`count`.

Files are streamed in blocks (:func:`cybpe.training.shards.read_blocks`) cut where the pieces
cannot change, so the counts do not depend on where blocks fall, nor on the number of workers
(tested against counting whole texts).
"""

from __future__ import annotations

import functools
import glob
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

from cybpe.errors import CorpusError, InvalidParameterError, ParameterTypeError
from cybpe.io.atomic import checked_path
from cybpe.io.readers import is_url, require_fsspec
from cybpe.pretokenize.registry import pretokenizer_from_spec
from cybpe.training.counts import ChunkCounts
from cybpe.training.shards import BLOCK_CHARS, Shard, cut_splitter, read_blocks

PathLike = Union[str, os.PathLike]
_GLOB_CHARS = "*?["


def _expand_url(pattern: str) -> list[Shard]:
    fs, path = require_fsspec().core.url_to_fs(pattern)
    if any(ch in path for ch in _GLOB_CHARS):
        matches = sorted(fs.glob(path))
        if not matches:
            raise CorpusError(f"{pattern}: no file matches")
        return [Shard(fs.unstrip_protocol(m)) for m in matches]
    if fs.isdir(path):
        return [Shard(fs.unstrip_protocol(m)) for m in sorted(fs.find(path))
                if not os.path.basename(m).startswith(".")]
    return [Shard(pattern)]


def _walk(directory: str) -> list[Path]:
    """Every file under ``directory``, sorted; names starting with a dot are skipped."""
    out: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out.extend(Path(root, n) for n in names if not n.startswith("."))
    return sorted(out, key=os.fspath)


def files(*patterns: PathLike) -> list[Union[Path, Shard]]:
    """Expand file names, directories (every file under them; hidden ones skipped), glob
    patterns (``**`` recurses) and URLs (with fsspec; globs too) into a list for ``train`` and
    ``count``: a ``Path`` per local file, a :class:`Shard` per URL."""
    out: list[Union[Path, Shard]] = []
    for pattern in patterns:
        if isinstance(pattern, Shard):
            out.append(pattern)
            continue
        name = checked_path(pattern, "a file name or glob pattern")
        if is_url(name):
            out.extend(_expand_url(name))
            continue
        if os.path.isdir(name):
            out.extend(_walk(name))
            continue
        matches = sorted(glob.glob(name, recursive=True))
        if not matches:
            if any(ch in name for ch in _GLOB_CHARS):
                raise CorpusError(f"{pattern}: no file matches")
            matches = [name]
        out.extend(Path(m) for m in matches if not os.path.isdir(m))
    return out


def counts_for(spec: dict, special_tokens: Sequence[str]) -> ChunkCounts:
    """Empty counts for a pre-tokenizer spec (how workers rebuild the caller's counts)."""
    return ChunkCounts(pretokenizer_from_spec(spec), special_tokens)


def _count_block_of(spec: dict, specials: tuple, text: list[str]) -> Any:
    """Worker process side: the counts of one batch, as a ChunkCounter (pickles as flat arrays)."""
    return counts_for(spec, specials).update(text).table


def _is_source(item: Any) -> bool:
    return isinstance(item, Shard) or (type(item) is not str and isinstance(item, os.PathLike))


def _blocks(items: Iterable[Any], split, errors: str, block_chars: int) -> Iterator[list[str]]:
    """Batches of texts of about ``block_chars`` characters; a file's blocks are yielded alone."""
    batch: list[str] = []
    size = 0
    for item in items:
        if _is_source(item):
            sources = files(item) if not isinstance(item, Shard) else [item]
            for source in sources:
                for block in read_blocks(source, split, errors, block_chars):
                    yield [block]
            continue
        if not isinstance(item, str):
            raise CorpusError(f"corpus items must be str texts, paths or Shards, not {type(item).__name__}")
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
    items: Iterable[Any],
    *,
    workers: Optional[int] = None,
    errors: str = "strict",
    progress: Optional[Callable[[int], None]] = None,
    block_chars: int = BLOCK_CHARS,
) -> ChunkCounts:
    """Count the texts, files (``os.PathLike``) and Shards of ``items`` into ``counts``; returns it.

    ``workers`` > 1 counts blocks in that many threads (compiled scanners release the GIL) or,
    for regex-only pre-tokenizers, processes; the result is identical for any value.
    ``progress(n_bytes)`` is called after each block with its size in UTF-8 bytes.
    """
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise InvalidParameterError(f"workers must be an integer ≥ 1, got {workers!r}")
    if counts.capped:
        block_chars = min(block_chars, counts.cap_block_chars)
    blocks = _blocks(items, cut_splitter(counts.pretokenizer, counts.special_tokens), errors, block_chars)
    n = workers if workers is not None else 1
    if n <= 1:
        for batch in blocks:
            counts.update(batch)
            if progress:
                progress(_utf8_size(batch))
        return counts

    # Imported here: concurrent.futures.process (multiprocessing) was 14 ms of every
    # `import cybpe` (-X importtime, 2026-12-03), for counts that never start a process.
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    pre = counts.pretokenizer
    if pre.uses_scanner and pre.compiled_scanner is not None:
        # The compiled counter releases the GIL: threads share the work without pickling texts.
        def count_in_thread(batch: list[str]) -> Any:
            return counts.empty_like().update(batch).table

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


def count(
    corpus: Any,
    pretokenizer: Any = "cl100k",
    special_tokens: Sequence[str] = (),
    *,
    workers: Optional[int] = None,
    errors: str = "strict",
    max_unique: Optional[int] = None,
    max_bytes: Optional[int] = None,
    **pretokenizer_params: Any,
) -> ChunkCounts:
    """Count the pre-tokenized chunks of a corpus: one ``str`` text, a file, folder or
    :class:`Shard` (``pathlib.Path``; :func:`files` expands globs and URLs), or an iterable
    mixing texts, paths and shards. Compressed files are read streaming.

    ``workers`` counts in that many threads (compiled pre-tokenizers) or processes; the result
    does not depend on it. ``errors`` for invalid UTF-8, as for ``bytes.decode``.
    ``max_unique`` / ``max_bytes`` bound the memory (see :class:`ChunkCounts`): the result is
    then approximate, with ``max_undercount`` saying by how much at most.
    """
    counts = ChunkCounts(pretokenizer, special_tokens, max_unique=max_unique, max_bytes=max_bytes,
                         **pretokenizer_params)
    if isinstance(corpus, (str, os.PathLike, Shard)):
        corpus = [corpus]
    elif isinstance(corpus, (bytes, bytearray)) or not hasattr(corpus, "__iter__"):
        raise ParameterTypeError(
            f"count() takes a str text, a path, a Shard or an iterable of them, not {type(corpus).__name__}")
    return count_corpus(counts, corpus, workers=workers, errors=errors)
