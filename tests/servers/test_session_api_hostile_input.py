"""Requests whose JSON parses but cannot be stored (lone surrogates, NaN, Infinity, 1e400) are a 422
naming the field, with nothing stored; a URL whose id is not UTF-8 is a 400 and never aliases
another id; ``/health`` says nothing about the workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from session_support import ok, served_sample_workspace


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("hostile") / "ws") as served:
        yield served


def _post_raw(client: httpx.Client, path: str, body: str) -> httpx.Response:
    # Sent as written: a JSON library would refuse to produce these bodies.
    return client.post(path, content=body.encode("ascii"), headers={"content-type": "application/json"})


TOOL = '{{"role": "assistant", "parts": [{{"type": "tool", "tool_name": "t", "tool_input": {inner}}}]}}'
CASES = [
    ('{"role": "user", "content": "a\\ud800b"}', "content: a lone surrogate (U+D800) at character 1"),
    (
        '{"role": "user", "parts": [{"type": "text", "text": "\\udfff"}]}',
        "parts.0.text: a lone surrogate (U+DFFF)",
    ),
    (TOOL.format(inner='{"k\\ud83d": 1}'), "parts.0.tool_input.k\\ud83d: the key: a lone surrogate"),
    (TOOL.format(inner='{"q": ["x", "\\ud800"]}'), "parts.0.tool_input.q.1: a lone surrogate"),
    (TOOL.format(inner='{"n": NaN}'), "parts.0.tool_input.n: nan is not a JSON number"),
    (TOOL.format(inner='{"n": -Infinity}'), "parts.0.tool_input.n: -inf is not a JSON number"),
    (TOOL.format(inner='{"deep": {"n": 1e400}}'), "parts.0.tool_input.deep.n: inf is not a JSON number"),
]


@pytest.mark.parametrize(("body", "named"), CASES)
def test_what_cannot_be_stored_is_refused_naming_the_field(
    served: tuple[httpx.Client, Path], body: str, named: str
) -> None:
    client, root = served
    response = _post_raw(client, "/api/v1/sessions/h1/messages", body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "INVALID_ARGUMENT" and error["message"].startswith(named), error
    batch = _post_raw(
        client,
        "/api/v1/sessions/h1/messages/batch",
        f'{{"messages": [{{"role": "user", "content": "fine"}}, {body}]}}',
    )
    assert batch.status_code == 422 and batch.json()["error"]["message"].startswith(f"messages.1.{named}")
    assert not (root / "sessions/h1").exists()  # nothing stored, not even the session


def test_a_big_number_that_is_finite_is_kept(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    ok(
        _post_raw(
            client,
            "/api/v1/sessions/h2/messages",
            TOOL.format(inner='{"n": 1e300, "m": 12345678901234567890}'),
        )
    )
    assert '"n":1e+300' in (root / "sessions/h2/messages.jsonl").read_text()


def test_an_id_that_is_not_utf8_is_refused_and_never_aliases_another(
    served: tuple[httpx.Client, Path],
) -> None:
    client, root = served
    for raw in ("%FF", "%FE", "a%C3", "%ED%A0%80"):  # the last: a surrogate encoded as UTF-8
        response = client.post(f"/api/v1/sessions/{raw}/messages", json={"role": "user", "content": "x"})
        assert response.status_code == 400, (raw, response.text)
        assert response.json()["error"]["message"].startswith("path: "), response.text
        assert client.get(f"/api/v1/sessions/{raw}").status_code == 400
    assert not (root / "sessions").exists() or not any(
        "\ufffd" in p.name for p in (root / "sessions").iterdir()
    )
    # the replacement character itself, sent as valid UTF-8, is an id of its own: the refused ones
    # above were never read as it
    ok(client.post("/api/v1/sessions/%EF%BF%BD/messages", json={"role": "user", "content": "x"}))
    assert ok(client.get("/api/v1/sessions/%EF%BF%BD"))["message_count"] == 1


def test_health_says_nothing_about_the_workspace(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    health = client.get("/health")
    assert health.status_code == 200
    assert health.json() == {
        "status": "ok",
        "service": "ovtui sessions",
        "healthy": True,
        "auth_mode": "dev",
        "pending_tasks": 0,
    }
    assert root.name not in health.text and str(root.parent) not in health.text
