import numpy as np
import numpy.typing as npt

from cybpe.encode.encoder import RankEncoder
from cybpe.pretokenize.pattern_scanner import PatternScanner
from cybpe.pretokenize.scanner import Scanner

def encode_scanned(
    encoder: RankEncoder, scanner: Scanner | PatternScanner, data: bytes | bytearray | memoryview
) -> npt.NDArray[np.uint32] | None: ...
def encode_texts_scanned(encoder: RankEncoder, scanner: Scanner, texts: list[str]) -> list[list[int]]: ...
def encode_scanned_spans(
    encoder: RankEncoder,
    scanner: Scanner | PatternScanner,
    data: bytes | bytearray | memoryview,
    limit: int = -1,
    offsets: bool = True,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64] | None] | None: ...
def encode_texts_flat(
    encoder: RankEncoder, scanner: Scanner, texts: list[str], limit: int = -1, offsets: bool = False
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64], npt.NDArray[np.int64] | None]: ...
