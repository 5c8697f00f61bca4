"""Exact shards: byte ranges of corpus files, cut only where the chunk counts cannot change.

A cut goes just after a newline that a non-space character follows, and only where the
pre-tokenizer (with the special tokens cut out first) splits the text around the cut into the
same pieces as the two halves: checked on ``CUT_WINDOW`` characters each side. Pre-tokenizers
match left to right and look ahead at most a few characters, so a piece boundary there is a
boundary of the whole text too. The same check cuts files into the blocks that counting
streams (:mod:`cybpe.training.corpus`): the counts of the shards of a file add up to the
counts of the whole file, whatever the number of shards, blocks or workers (tested on the
training corpus and on files made to defeat it).

Compressed files cannot be read from the middle, so each is one shard (split by file).

Thread safety: the functions share no state.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional, Sequence, Union

import regex

from cybpe.io.atomic import checked_path
from cybpe.errors import CorpusError, InvalidParameterError, ParameterTypeError, describe
from cybpe.io.readers import detect_compression, is_url, iter_text, open_raw

BLOCK_CHARS = 1 << 22  # ~4 M characters per block counted at once (sent to a worker)
CUT_WINDOW = 512  # characters split on each side of a candidate cut
_CUT_CANDIDATE = regex.compile(r"\n(?=\S)")
#: Where blocks may also be cut when a long stretch of text has no newline cut (one giant line,
#: or every newline followed by a space): before a space or tab that ends a non-space run and
#: starts the next. Only :func:`read_blocks` uses it; shards map bytes to text by newlines.
_FALLBACK_CANDIDATE = regex.compile(r"(?<=\S)(?=[ \t]\S)")
CUT_TRIES = 32  # candidate cuts of each kind judged per stretch of text read (see read_blocks)
_LEFT_BYTES = 4 * CUT_WINDOW  # at least CUT_WINDOW characters of UTF-8
_SEARCH_BYTES = 1 << 16  # read this much past a target for the first safe cut, then more

PathOrUrl = Union[str, "os.PathLike[str]"]


class Shard(NamedTuple):
    """Bytes ``start`` to ``end`` (None: the end) of a file or URL; counted like a file."""

    source: Union[str, Path]
    """The file (a Path) or URL (a str)."""
    start: int = 0
    """The first byte of the range."""
    end: Optional[int] = None
    """The byte after the last one (``None``: the end of the file)."""

    def __repr__(self) -> str:
        end = "end" if self.end is None else self.end
        return f"Shard({os.fspath(self.source)!r}, {self.start}..{end})"


def safe_cut(text: str, split: Callable[[str], list], start: int,
             candidates: "regex.Pattern[str]" = _CUT_CANDIDATE, tries: Optional[int] = None) -> int:
    """A cut position ≥ start where splitting halves equals splitting the whole, or -1.

    Only the ``candidates`` positions are tried (by default just after a newline that a
    non-space character follows), at most ``tries`` of them when given."""
    for m in candidates.finditer(text, start):
        if tries is not None:
            if tries <= 0:
                return -1
            tries -= 1
        cut = m.end()
        lo, hi = max(0, cut - CUT_WINDOW), min(len(text), cut + CUT_WINDOW)
        if hi - cut < CUT_WINDOW // 4:
            return -1  # too close to the end of the buffer to judge; read more first
        if split(text[lo:cut]) + split(text[cut:hi]) == split(text[lo:hi]):
            return cut
    return -1


def _nth_newline(data: Union[bytes, str], k: int, start: int = 0) -> int:
    """Index of the k-th (1-based) newline of data[start:], or -1."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    pos = start - 1
    for _ in range(k):
        pos = data.find(newline, pos + 1)  # type: ignore[arg-type]
        if pos < 0:
            return -1
    return pos


def _cut_after(f: Any, size: int, target: int, limit: int, split: Callable[[str], list]) -> int:
    """The byte offset of the first safe cut in [target, limit), or -1.

    Bytes map to characters through the newlines: the decoder neither makes nor swallows one
    (invalid bytes are replaced only within a sequence, and ``\\n`` always ends one)."""
    lo = max(0, target - _LEFT_BYTES)
    search = _SEARCH_BYTES
    while True:
        hi = min(size, limit + CUT_WINDOW * 4, target + search)
        f.seek(lo)
        raw = f.read(hi - lo)
        skip = 0
        while skip < min(4, len(raw)) and 0x80 <= raw[skip] < 0xC0:
            skip += 1  # start at a character boundary
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(raw[skip:], final=hi >= size)
        before = raw.count(b"\n", skip, target - lo)  # newlines left of the target
        first = _nth_newline(text, before + 1)
        if first < 0:
            return -1
        cut = safe_cut(text, split, first)
        if cut >= 0:
            k = text.count("\n", 0, cut)
            offset = lo + _nth_newline(raw, k, skip) + 1
            return offset if offset < limit else -1
        if hi >= size or hi >= limit + CUT_WINDOW * 4:
            return -1
        search *= 4


def _size_and_kind(source: PathOrUrl) -> tuple[int, Optional[str]]:
    with open_raw(source) as f:
        kind = detect_compression(f.read(10))
        size = f.seek(0, os.SEEK_END)
    return size, kind


def cut_splitter(pretokenizer: Any, special_tokens: Sequence[str] = ()) -> Callable[[str], list]:
    """The split that judges cuts: the pre-tokenizer's pieces of the text with the special
    tokens cut out first (so no cut falls inside a special token)."""
    if not special_tokens:
        return pretokenizer.split
    from cybpe.pretokenize.specials import SpecialTokenSplitter

    specials = SpecialTokenSplitter(tuple(sorted(set(special_tokens))))
    return lambda text: [p for part in specials.ordinary_parts(text) for p in pretokenizer.split(part)]


def read_blocks(
    source: Union[PathOrUrl, Shard], split: Callable[[str], list], errors: str = "strict",
    block_chars: int = BLOCK_CHARS,
) -> Iterator[str]:
    """Yield the text of a file, URL or Shard in blocks of about ``block_chars`` characters,
    cut at safe places (never held whole). Invalid UTF-8 raises CorpusError.

    A block ends at the first safe newline cut after ``block_chars`` characters; when the text
    runs an eighth further without one, at the first safe cut before a space (so a file that is one
    giant line, or whose newlines are all followed by spaces, is still read in blocks). A text
    with neither is held until one comes."""
    if isinstance(source, Shard):
        check_shard(source)
        source, start, end = source.source, source.start, source.end
    else:
        start, end = 0, None
    buffer = ""
    # Candidates before these positions were judged already (not safe), so that a long text
    # without a cut is searched once, not once per read (which was quadratic).
    # A pre-tokenizer whose pieces run across newlines and spaces (superbpe) refuses most cuts,
    # and each refusal splits 2 * CUT_WINDOW characters three times. Judging every newline
    # candidate once per read took 3.7 s for 330 kB (superbpe); a first version of this loop,
    # where each fallback cut restarted that search, took 25 s for 30 kB (block_chars=3000).
    # So at most CUT_TRIES candidates of each kind are judged per ``step`` characters read, and a
    # text that refuses them all is held whole, as before.
    step = max(8 * CUT_WINDOW, block_chars // 8)
    searched, fallback_at = block_chars, block_chars + step
    for text in iter_text(source, errors, start=start, end=end):
        buffer += text
        while len(buffer) >= block_chars:
            cut = safe_cut(buffer, split, searched, tries=CUT_TRIES)
            if cut < 0 and len(buffer) >= fallback_at:
                cut = safe_cut(buffer, split, fallback_at - step, _FALLBACK_CANDIDATE, CUT_TRIES)
                if cut < 0:
                    fallback_at = len(buffer) + step
            if cut < 0:
                searched = max(searched, len(buffer) - CUT_WINDOW)
                break
            yield buffer[:cut]
            buffer = buffer[cut:]
            searched, fallback_at = block_chars, block_chars + step
    if buffer:
        yield buffer


def shards(
    paths: Union[PathOrUrl, Iterable[PathOrUrl]],
    n: int,
    pretokenizer: Any = "cl100k",
    special_tokens: Sequence[str] = (),
    **pretokenizer_params: Any,
) -> list[Shard]:
    """Cut files (paths or URLs) into about ``n`` byte ranges of similar size, each cut where the
    pre-tokenized chunks cannot change: the sum of the shards' :func:`cybpe.count` equals the
    count of the whole files, exactly.

    Each file gets shards in proportion to its size (at least one). Fewer come back where a
    file has no safe cut (one giant line, no newline) or is compressed (one shard per file).
    Give the pre-tokenizer and special tokens that will count the shards.
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise ParameterTypeError(f"shards(): n must be an integer ≥ 1, not {describe(n)}")
    if n < 1:
        raise InvalidParameterError(f"shards(): n must be an integer ≥ 1, got {n}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    elif isinstance(paths, (bytes, bytearray)) or not hasattr(paths, "__iter__"):
        raise ParameterTypeError(f"shards(): paths must be a path or an iterable of paths, not {type(paths).__name__}")
    sources = [p if isinstance(p, str) and is_url(p) else Path(checked_path(p, "shards(): a path"))
               for p in paths]
    if not sources:
        return []
    sizes = [_size_and_kind(s) for s in sources]
    total = sum(size for size, kind in sizes if kind is None) or 1
    from cybpe.pretokenize.registry import get_pretokenizer

    split = cut_splitter(get_pretokenizer(pretokenizer, **pretokenizer_params), special_tokens)
    out: list[Shard] = []
    for source, (size, kind) in zip(sources, sizes):
        pieces = 1 if kind is not None else max(1, round(n * size / total))
        if pieces == 1 or size == 0:
            out.append(Shard(source))
            continue
        targets = [size * i // pieces for i in range(1, pieces)] + [size]
        cuts = [0]
        with open_raw(source) as f:
            for target, limit in zip(targets, targets[1:]):
                cut = _cut_after(f, size, max(target, cuts[-1] + 1), limit, split)
                if cut > cuts[-1]:
                    cuts.append(cut)
        cuts.append(size)
        out.extend(Shard(source, a, None if b == size else b) for a, b in zip(cuts, cuts[1:]))
    return out


def check_shard(item: Any) -> Shard:
    """A Shard with sane fields (a corpus item may come from a user or another machine)."""
    if not isinstance(item.start, int) or item.start < 0 or (
        item.end is not None and (not isinstance(item.end, int) or item.end < item.start)
    ):
        raise CorpusError(f"{item!r}: bad byte range")
    return item


def _shard_size(piece: Shard) -> Optional[int]:
    """Bytes of a shard, where cheap to know (a local file's size for an open end)."""
    if piece.end is not None:
        return piece.end - piece.start
    if isinstance(piece.source, os.PathLike) or not is_url(os.fspath(piece.source)):
        try:
            return max(0, os.path.getsize(piece.source) - piece.start)
        except OSError:
            return None
    return None


def group_shards(pieces: list[Shard], n: int) -> list[list[Shard]]:
    """``pieces`` in at most ``n`` consecutive groups of about equal bytes (one task each):
    ``shards`` gives every file at least one shard, and 16 files on 2 workers made 16 partial
    counts to add instead of 2. Shards of unknown size count as the mean of the known ones."""
    if len(pieces) <= n:
        return [[p] for p in pieces]
    sizes = [_shard_size(p) for p in pieces]
    known = [s for s in sizes if s is not None]
    mean = sum(known) / len(known) if known else 1.0
    weights = [float(s) if s is not None else mean for s in sizes]
    total = sum(weights) or 1.0
    groups: list[list[Shard]] = []
    done = 0.0
    for piece, weight in zip(pieces, weights):
        # a new group when this piece's middle lies past the next group's share of the bytes
        if not groups or (done + weight / 2 > total * len(groups) / n and len(groups) < n):
            groups.append([])
        groups[-1].append(piece)
        done += weight
    return groups
