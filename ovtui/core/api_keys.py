"""API keys come from environment variables named in the config or on the command line, never from
a file: a key never appears in ovtui.toml, a process listing or a log. One lookup for every reader
(the LLM client, remote datasets, the session trainer, the servers), so each says the same thing
when the variable it names is not set."""

from __future__ import annotations

import os

from ovtui.core.errors import ConfigError, OvtuiError


def api_key_from_env(
    variable: str | None, what: str, *, required: bool = True, error: type[OvtuiError] = ConfigError
) -> str | None:
    """The key held by environment variable ``variable`` (surrounding whitespace dropped).

    No variable named: None. A named variable that is unset or blank raises ``error`` naming
    ``what`` (the setting that named it, e.g. ``[datasets.remote] api_key_env``) and the variable,
    unless the key is optional (``required=False``), when it is None too."""
    if not variable:
        return None
    value = os.environ.get(variable, "").strip()
    if value:
        return value
    if required:
        raise error(f"{what}: the environment variable {variable} is not set")
    return None
