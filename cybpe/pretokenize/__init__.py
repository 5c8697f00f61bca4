"""Stage 1, pre-tokenization: the PreTokenizer type, the plugin registry, special-token splitting, the compiled scanners and the pattern compiler/matcher.

Internal: the public API is the top-level ``cybpe`` package."""
