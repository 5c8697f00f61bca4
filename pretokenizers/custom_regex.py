"""A pre-tokenizer from any regex string, for patterns that have no plugin of their own."""

from cybpe.hookspecs import hookimpl


def pattern(pattern: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("parameter 'pattern' must be a non-empty regex string")
    return pattern


@hookimpl
def cybpe_register_pretokenizers(register):
    """Any regex (the `pattern` parameter, syntax of the `regex` module); saved with the tokenizer."""
    register("regex", pattern, params={"pattern": (None, None)})
