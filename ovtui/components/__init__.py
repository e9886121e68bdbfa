"""Concrete components behind the Protocols of ``ovtui.interfaces``: one file per kind."""
