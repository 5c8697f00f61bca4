"""The merge paths are C-level only (see merge_paths.pyx); nothing here is for Python."""
