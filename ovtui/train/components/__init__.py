"""Concrete components behind the Protocols of ovtui.core.interfaces: one module per kind."""
