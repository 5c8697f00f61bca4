"""Stage 2, encoding: rank tables, the rank encoder, its merge paths, the fused scan+encode path,
and around it offsets (spans), token budgets (budgets) and unstable completions (unstable).

Internal: the public API is the top-level ``cybpe`` package."""
