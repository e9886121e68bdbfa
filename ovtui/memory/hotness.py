"""Hotness (seed 004 §3.7): how often and how recently a memory was used, as a score in [0, 1].

A use is a memory retrieved into a prompt or a rollout. Uses are appended to
``.ovtui/hotness.jsonl`` (one line per use: uri and time; appends never rewrite a memory file, so
using a memory makes no History record). The score follows the seed's shape — frequency squashed
by ``sigmoid(log1p(count))``, times an exponential decay with the age of the last use and a
configurable half-life — and is zero for a memory never used. Retrieval mixes it in with a
weight: ``(1 - w) · relevance + w · hotness`` over relevances scaled to [0, 1]; ``w = 0`` leaves
retrieval as it was.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ovtui.workspace import fsio
from ovtui.workspace.paths import WorkspacePaths

LOG_NAME = "hotness.jsonl"
DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class Usage:
    count: int
    last_used: float  # epoch seconds


def hotness_score(usage: Usage | None, *, now: float, half_life_days: float) -> float:
    if usage is None or usage.count <= 0:
        return 0.0
    frequency = 1.0 / (1.0 + math.exp(-math.log1p(usage.count)))
    age_days = max(0.0, now - usage.last_used) / DAY_S
    return frequency * math.exp(-math.log(2) / half_life_days * age_days)


def blend(relevance: Sequence[float], hotness: Sequence[float], weight: float) -> list[float]:
    """Relevance (scaled by its maximum) and hotness mixed with ``weight`` in [0, 1]."""
    if weight <= 0:
        return list(relevance)
    top = max(relevance, default=0.0) or 1.0
    return [(1 - weight) * r / top + weight * h for r, h in zip(relevance, hotness, strict=True)]


class HotnessLog:
    def __init__(self, paths: WorkspacePaths) -> None:
        self.paths = paths
        self.path = paths.state / LOG_NAME

    def record(self, uris: Iterable[str], *, at: float | None = None) -> None:
        stamp = time.time() if at is None else at
        lines = "".join(json.dumps({"uri": uri, "at": stamp}) + "\n" for uri in uris)
        if not lines:
            return
        fd = fsio.open_in_place(self.path, os.O_WRONLY | os.O_APPEND, root=self.paths.root)
        try:
            os.write(fd, lines.encode())  # one write per call: concurrent appenders do not interleave
        finally:
            os.close(fd)

    def usage(self) -> dict[str, Usage]:
        found: dict[str, Usage] = {}
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return found
        for line in text.splitlines():
            try:
                entry = json.loads(line)
                uri, at = str(entry["uri"]), float(entry["at"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a crash: that one use is lost, nothing else
            before = found.get(uri)
            found[uri] = Usage(
                (before.count if before else 0) + 1, max(at, before.last_used if before else at)
            )
        return found

    def scores(self, uris: Sequence[str], *, half_life_days: float, now: float | None = None) -> list[float]:
        usage = self.usage()
        moment = time.time() if now is None else now
        return [hotness_score(usage.get(u), now=moment, half_life_days=half_life_days) for u in uris]
