"""Vocabularies on disk: the in-memory Vocab and the native, tiktoken, HF and GPT-2 formats.

Internal: the public API is the top-level ``cybpe`` package."""
