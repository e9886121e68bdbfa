"""A workspace's datasets: local (``datasets/<name>/<split>.jsonl``) or remote (``[datasets.NAME]``
with a service URL). Train, eval and the app open both the same way."""

from __future__ import annotations

import os

from ovtui.components.case_loader import JsonlCaseLoader, ListCaseLoader
from ovtui.components.remote import RemoteCaseLoader, RemoteRolloutExecutor
from ovtui.config import OvtuiConfig, RemoteDatasetConfig
from ovtui.errors import ConfigError
from ovtui.workspace.paths import WorkspacePaths


def remote_api_key(name: str, remote: RemoteDatasetConfig) -> str | None:
    if not remote.api_key_env:
        return None
    value = os.environ.get(remote.api_key_env, "").strip()
    if not value:
        raise ConfigError(
            f"[datasets.{name}] api_key_env: the environment variable {remote.api_key_env} is not set"
        )
    return value


async def open_case_loader(
    paths: WorkspacePaths,
    config: OvtuiConfig,
    dataset: str,
    split: str,
    batch_size: int,
    limit: int | None = None,
) -> ListCaseLoader:
    remote = config.datasets.get(dataset)
    if remote is None:
        return JsonlCaseLoader(paths, dataset, split, batch_size, limit)
    return await RemoteCaseLoader.open(
        remote.urls[0],
        remote.split or split,
        dataset=remote.dataset,
        domain=remote.domain,
        filters=remote.filters,
        api_key=remote_api_key(dataset, remote),
        batch_size=batch_size,
        limit=limit,
    )


def remote_executor(config: OvtuiConfig, dataset: str) -> RemoteRolloutExecutor | None:
    remote = config.datasets.get(dataset)
    if remote is None:
        return None
    return RemoteRolloutExecutor(
        remote.urls,
        api_key=remote_api_key(dataset, remote),
        max_in_flight=remote.max_in_flight,
        timeout=remote.timeout,
    )
