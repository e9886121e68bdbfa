"""Where a server may listen and with which key: loopback needs none, anything else needs one.

The key comes from an environment variable named on the command line (``--api-key-env VAR``) so
it never appears in a process listing, a config file or a log.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

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
        value = os.environ.get(api_key_env, "")
        if not value.strip():
            raise ServerConfigError(f"--api-key-env {api_key_env}: the environment variable is not set")
        return value.strip()
    if not is_loopback(host):
        raise ServerConfigError(
            f"--host {host} is not a loopback address: serving beyond this machine needs a key, "
            "give --api-key-env VAR with the key in the environment variable VAR"
        )
    return None


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """What the command line of a server says: ``--host --port --workers --api-key-env --state``."""

    host: str = "127.0.0.1"
    port: int = 0
    workers: int = 4
    api_key_env: str | None = None

    def api_key(self) -> str | None:
        return resolve_api_key(self.host, self.api_key_env)
