"""An example third-party cybpe plugin (installed by the tests; shown in the README)."""

import cybpe


@cybpe.hookimpl
def cybpe_register_pretokenizers(register):
    """Whitespace splitting: runs of non-space characters, and runs of spaces."""
    register("whitespace", r"\S+|\s+")
