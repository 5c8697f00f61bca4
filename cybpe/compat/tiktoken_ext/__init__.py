"""``tiktoken_ext``: tiktoken's plugin namespace, here holding :mod:`.openai_public` only."""
