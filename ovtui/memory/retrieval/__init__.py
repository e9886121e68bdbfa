"""Retrieval over the workspace's memories: the ranking every retriever shares (``ranking``), the
incremental index of every memory file (``index``), who may see what and how a ``viking://`` URI
becomes a path (``access``), what a URI holds in OpenViking's shapes (``content``), the caches of
vectors and model-made abstracts (``cache``), and the workspace's retrieval behind the facade
(``service``; the facade's ``record_uses`` is where a memory it serves is recorded)."""
