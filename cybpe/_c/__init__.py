"""The shared C layer: types, UTF-8 helpers, Unicode tables (and their generator), the UTF-8 text batch owner.

Internal: the public API is the top-level ``cybpe`` package."""
