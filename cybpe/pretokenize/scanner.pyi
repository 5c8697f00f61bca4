"""Typed stub of the compiled pre-tokenizer scanners (cybpe/pretokenize/scanner.pyx)."""

from typing import Final, Union

import numpy as np
import numpy.typing as npt

from cybpe.pretokenize.scanner_api import BaseScanner

_BytesLike = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

#: Every scanner name, in kind order (``Scanner(name).kind == SCANNER_NAMES.index(name)``).
SCANNER_NAMES: Final[tuple[str, ...]]

class Scanner(BaseScanner):
    """A compiled splitter with exactly the spans of one built-in pre-tokenizer pattern."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> int: ...
    def __init__(self, name: str) -> None: ...
    def __reduce__(self) -> tuple[type[Scanner], tuple[str]]: ...
    def __eq__(self, other: object) -> bool:
        """Scanners of the same name are equal."""
    def __hash__(self) -> int: ...

def _code_point_classes() -> bytes: ...
def _ascii_masks_both(data: _BytesLike) -> tuple[tuple[int, ...], tuple[int, ...]]: ...
def _ends_by_scan_next(kind: int, data: _BytesLike) -> list[int]: ...
