"""Stage 2, encoding: rank tables, the rank encoder, its merge paths and the fused scan+encode path.

Internal: the public API is the top-level ``cybpe`` package."""
