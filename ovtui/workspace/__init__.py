"""The workspace folder: paths and URIs, atomic file I/O, the lock, the apply journal, history."""
