"""Bytes on disk: workspace paths and name rules, durable writes, locks, the journal, watching and
job records."""
