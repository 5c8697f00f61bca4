"""Stage 3, training: reading corpora, chunk counts, the compiled chunk counter, the merge trainer and progress.

Internal: the public API is the top-level ``cybpe`` package."""
