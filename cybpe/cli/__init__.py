"""The ``cybpe`` command line.

Internal: the public API is the top-level ``cybpe`` package."""
