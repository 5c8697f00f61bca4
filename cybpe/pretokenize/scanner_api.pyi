"""Typed stub of the compiled-scanner base class (cybpe/pretokenize/scanner_api.pyx)."""

from typing import Union, final

import numpy as np
import numpy.typing as npt

_BytesLike = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

@final
class EndsBuffer:
    """Owns the piece-end array a numpy result views (created by the scanners only)."""

class BaseScanner:
    """Base of the compiled scanners; subclasses override the C method ``scan_all``."""

    def _gave_up(self, text: str) -> None: ...
    def split_utf8(self, data: _BytesLike) -> npt.NDArray[np.int64]:
        """Piece END byte offsets of UTF-8 ``data``; the GIL is released while scanning."""
    def split_spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` code-point offsets of the pieces, covering ``text``."""
    def split(self, text: str) -> list[str]:
        """The pieces of ``text``; they concatenate back to it."""
