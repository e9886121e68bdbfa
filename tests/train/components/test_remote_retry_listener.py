"""A case service that is not up yet: each failed try is told to whoever listens (a run shows
"connecting" with the try), over a real socket nothing listens on."""

from __future__ import annotations

from dataclasses import replace

import pytest
from server_support import closed_port_url

from ovtui.train.components.remote import RemoteCaseLoader
from ovtui.train.components.remote_transport import SERVICE_RETRY, RemoteError

FAST = replace(SERVICE_RETRY, base_delay=0.01, max_delay=0.05)


async def test_each_failed_try_but_the_last_is_told_with_its_number() -> None:
    url = closed_port_url()
    told: list[tuple[str, int, int, str]] = []
    loader = RemoteCaseLoader(url, "test", retry=FAST, attempts=3, on_retry=lambda *retry: told.append(retry))
    with pytest.raises(RemoteError, match="gave up after 3 tries"):
        await loader.cases()
    assert [(u, a, n) for u, a, n, _ in told] == [(url, 1, 3), (url, 2, 3)]
    assert all("Connect" in reason for *_, reason in told)
