"""Remote datasets (``[datasets.NAME] url``): the case source and the executor built from the config.
The registry names the case source ``remote``; the workspace picks both for a dataset the config
declares, so train, eval and the app use a remote dataset exactly like a local one."""

from __future__ import annotations

from ovtui.core.api_keys import api_key_from_env
from ovtui.core.config import OvtuiConfig, RemoteDatasetConfig
from ovtui.train.components.remote import RemoteCaseLoader, RemoteRolloutExecutor


def remote_api_key(name: str, remote: RemoteDatasetConfig) -> str | None:
    return api_key_from_env(remote.api_key_env, f"[datasets.{name}] api_key_env")


def remote_case_loader(
    config: OvtuiConfig, dataset: str, split: str, batch_size: int, limit: int | None
) -> RemoteCaseLoader:
    remote = config.datasets[dataset]
    return RemoteCaseLoader(
        remote.urls[0],
        remote.split or split,
        dataset=remote.dataset,
        domain=remote.domain,
        filters=remote.filters,
        api_key=remote_api_key(dataset, remote),
        batch_size=batch_size,
        limit=limit,
    )


def remote_executor(config: OvtuiConfig, dataset: str) -> RemoteRolloutExecutor:
    remote = config.datasets[dataset]
    return RemoteRolloutExecutor(
        remote.urls,
        api_key=remote_api_key(dataset, remote),
        max_in_flight=remote.max_in_flight,
        timeout=remote.timeout,
    )
