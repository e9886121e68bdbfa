"""The one backoff rule: doubling from the base, capped; jitter only where asked; Retry-After wins."""

from __future__ import annotations

from ovtui.core.retry import RetryPolicy
from ovtui.train.components.remote_transport import SERVICE_RETRY


def test_without_jitter_the_wait_doubles_from_the_base_up_to_the_cap() -> None:
    policy = RetryPolicy(base_delay=0.05, max_delay=0.3, jitter=False)
    assert [policy.delay(retry) for retry in range(1, 6)] == [0.05, 0.1, 0.2, 0.3, 0.3]


def test_a_wait_the_server_asked_for_wins_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_retry_after=5.0)
    assert policy.delay(3, 0.0) == 0.0
    assert policy.delay(3, 2.5) == 2.5
    assert policy.delay(3, 90.0) == 5.0


def test_a_benchmark_service_is_retried_on_a_regular_schedule() -> None:
    assert [SERVICE_RETRY.delay(retry) for retry in (1, 2, 3)] == [0.05, 0.1, 0.2]
    assert SERVICE_RETRY.delay(10) == SERVICE_RETRY.max_delay
