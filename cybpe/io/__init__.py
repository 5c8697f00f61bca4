"""Shared I/O: atomic writes and file readers.

Internal: the public API is the top-level ``cybpe`` package."""
