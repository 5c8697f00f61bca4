"""Typed stub of the compiled chunk counter (cybpe/training/chunk_counter.pyx)."""

from typing import Iterable, Mapping, Optional, Union

import numpy as np
import numpy.typing as npt

from cybpe.pretokenize.pattern_scanner import PatternScanner
from cybpe.pretokenize.scanner import Scanner

_BytesLike = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]
_Kind = Union[str, int, Scanner, None]
_Chunk = Union[bytes, str]

class ChunkCounter:
    """Distinct chunks (bytes) -> int64 counts, filled by a compiled scanner (GIL released)."""

    @property
    def kind(self) -> int:
        """The scanner kind used by ``add_text``/``add_utf8``; -1 for a storage-only counter."""
    def __init__(self, kind: _Kind = None) -> None: ...
    def add_text(self, text: str, kind: _Kind = None) -> None:
        """Count the pieces of ``text``; UnicodeEncodeError (nothing counted) on lone surrogates."""
    def add_texts(self, texts: list[str], kind: _Kind = None) -> None: ...
    def add_texts_matched(self, texts: list[str], matcher: PatternScanner) -> None: ...
    def add_utf8(self, data: _BytesLike, kind: _Kind = None) -> None:
        """Count the pieces of UTF-8 bytes; invalid bytes never fault."""
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
    def __reduce__(self) -> tuple[object, tuple[int, bytes, bytes, bytes, str]]: ...

def _rebuild(kind: int, arena: bytes, offsets: bytes, counts: bytes, byteorder: str) -> ChunkCounter: ...
