"""Metrics and the pre-tokenizer variant report.

Internal: the public API is the top-level ``cybpe`` package."""
