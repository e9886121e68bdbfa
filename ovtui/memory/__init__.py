"""Memory files: the on-disk format, the declared memory types, merge ops, diffs and memory_diff records."""
