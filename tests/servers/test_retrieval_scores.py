"""Served scores are similarities on OpenViking's scale (issue #37, item 6): through a real
``ovtui serve`` of a trained sample workspace, the user's own stated preference for a request about
it scores above the threshold OpenViking's clients set (Hermes Agent's: 0.15) and above the sample
trajectories and experiences, in find and in search."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest
from retrieval_support import compact_ok, served, trained_sample

from ovtui.core.fileformat import render_memory

CLIENT_THRESHOLD = 0.15  # Hermes Agent's OpenViking provider drops hits scoring under it
QUERY = "What seats does Alice prefer?"
PREFERENCE = "viking://user/default/memories/preferences/default/window_seats.md"
PROFILE = "viking://user/default/memories/profile.md"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = trained_sample(tmp_path_factory.mktemp("scores") / "ws")
    folder = root / "memories" / "preferences" / "default"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "window_seats.md").write_text(
        render_memory(
            "- Alice prefers window seats on every flight.",
            {"topic": "window_seats", "memory_type": "preferences"},
        )
    )
    (root / "memories" / "profile.md").write_text(
        render_memory("- My name is Alice.\n- Alice flies to Paris often.", {"memory_type": "profile"})
    )
    with served(root) as client:
        yield client


def hits(client: httpx.Client, route: str, **body: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = compact_ok(client.post(f"/api/v1/search/{route}", json=body))["memories"]
    return found


@pytest.mark.parametrize("route", ["find", "search"])
def test_the_users_preference_passes_a_clients_threshold(client: httpx.Client, route: str) -> None:
    found = hits(client, route, query=QUERY, limit=10)
    scores = {h["uri"]: h["score"] for h in found}
    assert found[0]["uri"] == PREFERENCE and scores[PREFERENCE] >= 0.5
    assert scores[PROFILE] >= CLIENT_THRESHOLD  # it names Alice
    samples = [h for h in found if h["memory_type"] in ("trajectories", "experiences")]
    assert samples and all(h["score"] < scores[PREFERENCE] for h in samples)
    assert all(0 <= h["score"] <= 1 for h in found)
    assert [h["score"] for h in found] == sorted(scores.values(), reverse=True)
    # The client's threshold, applied by the server, keeps the preference.
    kept = hits(client, route, query=QUERY, limit=10, score_threshold=CLIENT_THRESHOLD)
    assert PREFERENCE in [h["uri"] for h in kept]
    assert all(h["score"] > CLIENT_THRESHOLD for h in kept)


def test_a_request_about_nothing_held_scores_below_the_threshold(client: httpx.Client) -> None:
    found = hits(client, "find", query="Write a poem about penguins and volcanoes for my customer", limit=10)
    assert found  # "customer" is in the sample's memories: weak matches, each well under the threshold
    assert all(h["score"] < CLIENT_THRESHOLD for h in found), [(h["uri"], h["score"]) for h in found]


def test_a_score_does_not_depend_on_the_types_searched(client: httpx.Client) -> None:
    everywhere = {h["uri"]: h["score"] for h in hits(client, "find", query=QUERY, limit=20)}
    only = hits(
        client,
        "find",
        query=QUERY,
        limit=5,
        filter={"op": "must", "field": "memory_type", "conds": ["preferences"]},
    )
    assert only and all(h["score"] == pytest.approx(everywhere[h["uri"]]) for h in only)
