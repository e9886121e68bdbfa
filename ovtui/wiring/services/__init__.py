"""The use cases a ``Workspace`` holds, one module each (``ovtui.wiring.workspace`` names them)."""
