"""Tokenize whole datasets into one flat array of ids on disk (``cybpe encode ... --output``).

The output is the flat little-endian binary that nanoGPT-style training memory-maps
(``np.memmap(path, dtype=np.uint16)``), or the same ids as a 1-D ``.npy`` when the output name
ends in ``.npy``. Each file is one document: its ids are exactly ``tokenizer.encode(whole file
text)``, followed by the end-of-text id when ``eot`` is given.

Bounded memory: files stream in blocks of about 1 M characters, cut only where pre-tokenizing
the two sides apart gives the same pieces as pre-tokenizing them together (the training
corpus reader's rule, so the ids do not depend on where blocks fall); at most two blocks per
worker are in flight. Blocks are encoded on ``workers`` threads (the encoder releases the GIL)
and written in order. The output is written to a temporary file beside the target and renamed
over it at the end, so a failed run leaves the target as it was.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, NamedTuple, Optional, Union

import numpy as np

from cybpe.api.tokenizer import Tokenizer
from cybpe.training.shards import read_blocks
from cybpe.training.progress import Progress
from cybpe.io.atomic import AtomicFile, checked_path
from cybpe.errors import InvalidParameterError, ParameterTypeError

PathLike = Union[str, "os.PathLike[str]"]
DTYPES = {"uint16": np.dtype("<u2"), "uint32": np.dtype("<u4")}
NPY_HEADER_BYTES = 128  # fixed, so the final shape can be written over the placeholder
# Blocks of 1 M characters (not training's 4 M): a block lives as its str (up to 4 bytes a
# character), its UTF-8 and its ids while in flight, and 4 M-character blocks took the peak RSS
# of a 200 MB multilingual input to 289 MB (78 MB of it the interpreter and the vocabulary).
BLOCK_CHARS = 1 << 20


class EncodeFilesResult(NamedTuple):
    files: int
    bytes: int    # UTF-8 bytes of text read (after decompression)
    tokens: int   # ids written, end-of-text ids included
    seconds: float


def output_dtype(tokenizer, dtype: str) -> np.dtype:
    """The numpy dtype for ``dtype`` ("uint16" or "uint32"); InvalidParameterError when the
    vocabulary's largest id does not fit."""
    if dtype not in DTYPES:
        raise InvalidParameterError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    found = DTYPES[dtype]
    largest = tokenizer.n_vocab - 1
    if largest > np.iinfo(found).max:
        raise InvalidParameterError(
            f"the vocabulary's ids go up to {largest}, which does not fit in {dtype} "
            f"(at most {np.iinfo(found).max}); use uint32")
    return found


def eot_id(tokenizer, eot: Union[bool, int, str, None]) -> Optional[int]:
    """The id appended after each document: None for no end-of-text token; True picks
    ``<|endoftext|>`` (or the tokenizer's only special token); a str names a special token."""
    if eot is None or eot is False:
        return None
    specials = tokenizer.special_tokens
    if eot is True:
        if "<|endoftext|>" in specials:
            return specials["<|endoftext|>"]
        if len(specials) == 1:
            return next(iter(specials.values()))
        raise InvalidParameterError(
            f"no <|endoftext|> token to end documents with; name one of the special tokens "
            f"({', '.join(sorted(specials)) or 'none'})")
    if isinstance(eot, str):
        if eot not in specials:
            raise InvalidParameterError(f"{eot!r} is not a special token of this tokenizer")
        return specials[eot]
    if isinstance(eot, (int, np.integer)) and 0 <= int(eot) < tokenizer.n_vocab:
        return int(eot)
    raise InvalidParameterError(f"eot must be True, a special token or an id, not {eot!r}")


def npy_header(dtype: np.dtype, count: int) -> bytes:
    """A version 1.0 .npy header for a 1-D array, padded to NPY_HEADER_BYTES."""
    body = f"{{'descr': '{dtype.str}', 'fortran_order': False, 'shape': ({count},), }}"
    pad = NPY_HEADER_BYTES - 10 - len(body) - 1
    return b"\x93NUMPY\x01\x00" + (NPY_HEADER_BYTES - 10).to_bytes(2, "little") + (body + " " * pad + "\n").encode()


class IdWriter:
    """Appends id arrays to a temporary file; ``commit`` renames it over the target.

    Written through :class:`cybpe.io.atomic.AtomicFile`, so a dataset follows the rules of every
    file cybpe writes: a directory, device or FIFO destination is a SaveError before anything
    is read, a symbolic link is written through, errors name the destination."""

    def __init__(self, path: PathLike, dtype: np.dtype) -> None:
        self.path = os.fspath(path)
        self.dtype = dtype
        self.npy = self.path.endswith(".npy")
        self.count = 0
        self._out = AtomicFile(self.path)
        if self.npy:
            self._out.write(npy_header(dtype, 0))

    def write(self, ids: np.ndarray) -> None:
        self._out.write(ids.astype(self.dtype, copy=False).tobytes())
        self.count += len(ids)

    def commit(self) -> None:
        if self.npy:
            try:
                self._out.file.seek(0)
            except OSError as exc:
                self._out.abort()
                raise self._out._error(exc) from exc
            self._out.write(npy_header(self.dtype, self.count))
        self._out.commit()

    def abort(self) -> None:
        self._out.abort()


def encode_files(tokenizer, paths: Iterable[PathLike], output: PathLike, *, dtype: str = "uint32",
                 eot: Union[bool, int, str, None] = None, allowed_special: Any = frozenset(),
                 disallowed_special: Any = "all", errors: str = "strict", workers: Optional[int] = None,
                 progress: bool = False, block_chars: int = BLOCK_CHARS) -> EncodeFilesResult:
    """Encode every file of ``paths`` (plain or gzip/xz/bzip2/zstd; ``"-"`` is stdin) with
    ``tokenizer`` into one flat array of ids at ``output`` (``.npy`` by name, else raw binary).

    Each file's ids equal ``tokenizer.encode(text, allowed_special=..., disallowed_special=...)``
    of its whole text; ``eot`` (True, a special token, or an id) is appended after each file.
    ``errors`` handles invalid UTF-8 as ``bytes.decode`` does (default: raise, naming the file
    and byte offset). ``workers`` threads encode (default: all cores)."""
    if not isinstance(tokenizer, Tokenizer):
        raise ParameterTypeError(f"encode_files() takes a cybpe.Tokenizer, not {type(tokenizer).__name__}")
    if isinstance(paths, (str, bytes, bytearray, os.PathLike)) or not hasattr(paths, "__iter__"):
        raise ParameterTypeError(f"encode_files(): paths must be a list of paths, not {type(paths).__name__}")
    paths = [checked_path(p, "encode_files(): a path") for p in paths]
    checked_path(output, "encode_files(): output")
    found = output_dtype(tokenizer, dtype)
    end_id = eot_id(tokenizer, eot)
    paths = [os.fspath(p) for p in paths]
    n = workers or os.cpu_count() or 1
    split = tokenizer.pretokenizer.split
    start = time.perf_counter()
    n_bytes = 0

    def encode_block(block: str) -> tuple[np.ndarray, int]:
        size = len(block.encode("utf-8", "surrogatepass"))
        ids = tokenizer.encode_to_numpy(block, allowed_special=allowed_special,
                                        disallowed_special=disallowed_special)
        return ids.astype(found, copy=False), size

    writer = IdWriter(output, found)
    try:
        with Progress(progress, "encode", unit="B") as bar, ThreadPoolExecutor(max_workers=n) as pool:
            pending: deque = deque()

            def drain(keep: int) -> None:
                nonlocal n_bytes
                while len(pending) > keep:
                    item = pending.popleft()
                    if isinstance(item, np.ndarray):  # an end-of-text id
                        writer.write(item)
                        continue
                    ids, size = item.result()
                    writer.write(ids)
                    n_bytes += size
                    bar.advance(size)
                    bar.note(f"{writer.count:,} tokens")

            try:
                for path in paths:
                    for block in read_blocks(path, split, errors, block_chars):
                        pending.append(pool.submit(encode_block, block))
                        del block
                        drain(2 * n)
                    if end_id is not None:
                        pending.append(np.array([end_id], dtype=found))
                drain(0)
            except BaseException:
                # Leaving the pool waits for its work: drop the blocks not started yet, so that
                # an interrupted or failed run stops after the blocks in hand.
                for item in pending:
                    if not isinstance(item, np.ndarray):
                        item.cancel()
                raise
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return EncodeFilesResult(len(paths), n_bytes, writer.count, time.perf_counter() - start)
