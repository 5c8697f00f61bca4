"""Encoding stages around the compiled encoder: offsets, token budgets, dataset files.

Internal: the public API is the top-level ``cybpe`` package."""
