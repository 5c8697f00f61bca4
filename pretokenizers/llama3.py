"""The Llama 3 pre-tokenizer: the original (2022, non-possessive) cl100k string."""

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl

#: ``meta-llama/llama3`` ``Tokenizer.pat_str``; also in Llama-3's tokenizer.json.
PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


@hookimpl
def cybpe_register_pretokenizers(register):
    """Llama 3: the original cl100k string (portable to HF/Oniguruma)."""
    register("llama3", PATTERN, scanner=Scanner("llama3"))
