"""Typed stub of the compiled chunk counter (cybpe/training/chunk_counter.pyx)."""

from typing import Callable, Iterable, Mapping, Optional, SupportsIndex, TypeVar, Union, final

import numpy as np
import numpy.typing as npt

from cybpe.pretokenize.scanner_api import BaseScanner

_BytesLike = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]
_Kind = Union[str, int, BaseScanner, None]
_Chunk = Union[bytes, str]
_T = TypeVar("_T")

@final
class ChunkCounter:
    """Distinct chunks (bytes) -> int64 counts, filled by a compiled scanner (GIL released)."""

    @property
    def scanner(self) -> Optional[BaseScanner]:
        """The compiled scanner ``add_text``/``add_utf8`` use; None for a storage-only counter."""
    @property
    def kind(self) -> int:
        """The built-in scanner's kind number; -1 without a scanner or for any other scanner."""
    def __init__(self, kind: _Kind = None) -> None: ...
    def add_text(self, text: str, kind: _Kind = None) -> None:
        """Count the pieces of ``text``; UnicodeEncodeError (nothing counted) on lone surrogates."""
    def add_texts(self, texts: list[str], kind: _Kind = None) -> None: ...
    def add_texts_matched(self, texts: list[str], matcher: BaseScanner) -> None: ...
    def add_utf8(self, data: _BytesLike, kind: _Kind = None) -> None:
        """Count the pieces of UTF-8 bytes; invalid bytes never fault."""
    def add_text_sliced(
        self, text: str, kind: _Kind, slice_pieces: int, after_slice: Callable[[], object]
    ) -> None:
        """add_text, counted slice_pieces pieces at a time, after_slice() between slices."""
    def add_counts(
        self, counts: Union[Mapping[_Chunk, int], Iterable[tuple[_Chunk, int]]]
    ) -> None:
        """Add counts (>= 0; str chunks are stored as UTF-8)."""
    def merge(self, other: "ChunkCounter") -> None:
        """Add every count of ``other`` (unchanged) to this counter."""
    def copy(self) -> "ChunkCounter": ...
    def __len__(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def items(self, sort: bool = False) -> list[tuple[bytes, int]]:
        """First-seen order, or sorted by bytes when ``sort``."""
    def sorted_arrays(self) -> tuple[list[bytes], npt.NDArray[np.int64]]: ...
    def get(self, chunk: bytes, default: Optional[int] = 0) -> Optional[int]: ...
    def __eq__(self, other: object) -> bool: ...
    def prune(self, min_count: int) -> tuple[int, int, int]:
        """Drop chunks counted fewer than ``min_count`` times; (chunks, occurrences, pair
        positions) dropped."""
    @property
    def growth_bytes(self) -> int:
        """Bytes the next growth of the table can add for a moment (a doubled slot array)."""
    def kth_largest_count(self, k: int) -> int:
        """The k-th largest count (1-based); 0 when there are fewer than k entries."""
    def count_array(self) -> npt.NDArray[np.int64]: ...
    @property
    def arena_bytes(self) -> int: ...
    def write_arrays(self, write: Callable[[memoryview], object]) -> None:
        """write() the offsets, counts and chunk bytes (native order), without copies."""
    def with_arrays(
        self, fn: Callable[[memoryview, memoryview, memoryview], _T]
    ) -> _T:
        """fn(arena, offsets, counts) over the table's own arrays, read-only, without copies."""
    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[object, tuple[object, ...]]: ...
    def __reduce__(self) -> tuple[object, tuple[object, ...]]: ...

def read_arrays(
    n: int, arena_bytes: int, readinto: Callable[[memoryview], object], swap: bool = False
) -> ChunkCounter: ...
def _rebuild(scanner: Union[BaseScanner, int, None], arena: _BytesLike, offsets: _BytesLike, counts: _BytesLike, byteorder: str) -> ChunkCounter: ...
