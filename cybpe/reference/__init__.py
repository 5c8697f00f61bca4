"""Pure-Python reference encoder and trainer that the tests compare the compiled paths against.

Internal: the public API is the top-level ``cybpe`` package."""
