"""The Qwen2 / Qwen2.5 / Qwen3 pre-tokenizer: the Llama 3 string with single digits."""

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl

#: transformers ``tokenization_qwen2.py`` ``PRETOKENIZE_REGEX``; also in Qwen3's tokenizer.json.
PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


@hookimpl
def cybpe_register_pretokenizers(register):
    """Qwen2/2.5/3: the Llama 3 rules with every digit its own piece."""
    register("qwen2", PATTERN, scanner=Scanner("qwen2"))
