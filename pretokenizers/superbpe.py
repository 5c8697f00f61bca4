r"""SuperBPE's stage-2 pre-tokenizer: only numbers split the text (arXiv 2503.13423).

Stage 2 of SuperBPE learns superword tokens, so spaces, punctuation and newlines no longer cut
pieces. Number runs (``\p{N}``) are their own pieces, cut into groups of three from the right
(``1234567`` -> ``1|234|567``), as in the paper's released tokenizers; everything between two
numbers is one piece. The cut is written with a lookahead, so the one pattern string exports to
tiktoken and HF ``tokenizer.json`` unchanged.
"""

from cybpe.hookspecs import hookimpl

PATTERN = r"""\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))|[^\p{N}]+"""


@hookimpl
def cybpe_register_pretokenizers(register):
    """SuperBPE stage 2: only numbers split (groups of three from the right); words may merge."""
    register("superbpe", PATTERN)
