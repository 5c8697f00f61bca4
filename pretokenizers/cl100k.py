"""tiktoken's cl100k_base pre-tokenizer (GPT-3.5/GPT-4), in its current possessive form."""

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl

#: tiktoken ``openai_public.py`` ``cl100k_base`` pat_str (possessive since 2024).
PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


@hookimpl
def cybpe_register_pretokenizers(register):
    """GPT-4 (cl100k_base): case-insensitive contractions, one-char prefix + letters, digits in threes."""
    register("cl100k", PATTERN, scanner=Scanner("cl100k"))
