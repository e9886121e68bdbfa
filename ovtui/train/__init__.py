"""Training: the engine, the pipeline, reports and the inbox; the review loop, the components and
the backends."""
