"""The original GPT-2 pre-tokenizer."""

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl

#: openai/gpt-2 ``src/encoder.py``; HF ByteLevel's built-in pattern is the same string.
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: tiktoken's r50k/p50k form, documented there as equivalent but faster (tested equal here).
PATTERN_R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


@hookimpl
def cybpe_register_pretokenizers(register):
    """GPT-2 (r50k/p50k): lowercase contractions, letter/number/other runs with one leading space."""
    register("gpt2", PATTERN, scanner=Scanner("gpt2"))
