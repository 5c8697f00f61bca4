import numpy as np
import numpy.typing as npt

from cybpe.encode.encoder import RankEncoder
from cybpe.pretokenize.pattern_scanner import PatternScanner
from cybpe.pretokenize.scanner import Scanner

def encode_scanned(
    encoder: RankEncoder, scanner: Scanner | PatternScanner, data: bytes | bytearray | memoryview
) -> npt.NDArray[np.uint32] | None: ...
def encode_texts_scanned(encoder: RankEncoder, scanner: Scanner, texts: list[str]) -> list[list[int]]: ...
