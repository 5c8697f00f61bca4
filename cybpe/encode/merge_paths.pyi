"""The merge paths are C-level only (see _merge_paths.pyx); nothing here is for Python."""
