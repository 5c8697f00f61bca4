"""A third-party cybpe plugin whose pre-tokenizer has a compiled (Cython) scanner."""

import cybpe

from cybpe_ascii_words.scanner import PATTERN, AsciiWordScanner


@cybpe.hookimpl
def cybpe_register_pretokenizers(register):
    """ASCII words with their leading space, numbers in threes, other runs, space runs."""
    register("ascii-words", PATTERN, scanner=AsciiWordScanner())
