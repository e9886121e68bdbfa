"""ovtui's own version, as its installed package names it (``ovtui --version``, the MCP server's
``serverInfo.version``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def ovtui_version() -> str:
    try:
        return version("ovtui")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
