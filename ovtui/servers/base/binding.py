"""Where a server may listen and with which key: loopback needs none, anything else needs one.

The key comes from an environment variable named on the command line (``--api-key-env VAR``) so
it never appears in a process listing, a config file or a log.
"""

from __future__ import annotations

import ipaddress

from ovtui.core.api_keys import api_key_from_env
from ovtui.core.errors import OvtuiError

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


class ServerConfigError(OvtuiError):
    """A server that may not start as asked (host without a key, key variable unset)."""


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def resolve_api_key(host: str, api_key_env: str | None) -> str | None:
    """The bearer key the server must check, or None (loopback without ``--api-key-env``)."""
    if api_key_env:
        return api_key_from_env(api_key_env, "--api-key-env", error=ServerConfigError)
    if not is_loopback(host):
        raise ServerConfigError(
            f"--host {host} is not a loopback address: serving beyond this machine needs a key, "
            "give --api-key-env VAR with the key in the environment variable VAR"
        )
    return None
