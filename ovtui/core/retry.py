"""How long a client waits before it tries a failed request again: the one backoff rule of the LLM
client and the benchmark-service client.

Exponential backoff: ``base_delay * 2**(retry-1)`` before retry number ``retry``, capped at
``max_delay``. With ``jitter`` the wait is drawn from the upper half of that, so that clients that
failed together do not all come back together. A wait the server asked for (Retry-After) wins over
the backoff, capped at ``max_retry_after``. How many tries a request gets is the caller's to say.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0
    jitter: bool = True

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 is the first), or the server's
        ``retry_after`` when it gave one."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (retry - 1))
        return random.uniform(ceiling / 2, ceiling) if self.jitter else ceiling
