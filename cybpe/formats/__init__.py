"""Vocabularies on disk: the in-memory Vocab and the native, tiktoken, HF and GPT-2 formats,
and transformers tokenizer directories.

Internal: the public API is the top-level ``cybpe`` package."""
