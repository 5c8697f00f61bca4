"""Pure-Python references that the compiled paths are tested against.

Internal: the public API is the top-level ``cybpe`` package."""
