"""The core: the domain, the Protocols, what a stage is told, errors, events, bounds and the
configuration schema."""
