"""Typed stub of the compiled pre-tokenizer scanners (cybpe/pretokenize/scanner.pyx)."""

from typing import Final, Union

import numpy as np
import numpy.typing as npt

_BytesLike = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

#: Every scanner name, in kind order (``Scanner(name).kind == SCANNER_NAMES.index(name)``).
SCANNER_NAMES: Final[tuple[str, ...]]

class Scanner:
    """A compiled splitter with exactly the spans of one built-in pre-tokenizer pattern."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> int: ...
    def __init__(self, name: str) -> None: ...
    def split_utf8(self, data: _BytesLike) -> npt.NDArray[np.int64]:
        """Piece END byte offsets of UTF-8 ``data``; the GIL is released while scanning."""
    def split_spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` code-point offsets, identical to the pattern's ``regex.finditer`` spans."""
    def split(self, text: str) -> list[str]: ...
    def __reduce__(self) -> tuple[type[Scanner], tuple[str]]: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

def _code_point_classes() -> bytes: ...
def _ends_by_scan_next(kind: int, data: _BytesLike) -> list[int]: ...
