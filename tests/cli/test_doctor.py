"""``ovtui doctor`` against a fake local server that refuses strict schemas and tools and does not
know ``temperature``: one line for each finding, recorded for the runs to come (no key in it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.cli.main import main
from ovtui.llm.capabilities import CapabilityMemory, endpoint_key
from ovtui.storage.paths import ENDPOINTS_FILE
from ovtui.testing.helpers import KEY_ENV, SECRET_KEY
from ovtui.testing.openai_server import FakeOpenAIServer, Reply

pytest_plugins = ["ovtui.testing.fixtures"]


def test_doctor_prints_and_records_what_the_endpoint_supports(
    tmp_path: Path, fake: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.supports_strict = fake.supports_tools = False
    fake.unknown_params = {"temperature"}
    fake.context_window = 8192
    fake.respond_with(lambda request: Reply.json({"ok": True}))
    root = tmp_path / "ws"
    build_sample_workspace(root)
    (root / "ovtui.toml").write_text(
        f'[llm]\nbackend = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake-model"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_retries = 0\n'
    )

    assert main(["doctor", str(root)]) == 0

    assert capsys.readouterr().out.splitlines() == [
        f"endpoint: {fake.base_url} (model fake-model)",
        "structured output: json_schema (strict refused: sent without)",
        "tools: no (tool requests go as JSON in the answer)",
        "parameters left out: temperature",
        "context window: 8192 tokens (reported by the endpoint)",
        f"recorded in {ENDPOINTS_FILE}",
    ]
    assert len(fake.refused_requests) == 3  # strict, temperature, tools: each asked once
    recorded = CapabilityMemory(root).recall(endpoint_key(fake.base_url, "fake-model"))
    assert recorded is not None
    assert (recorded.strict, recorded.tools, recorded.dropped_params) == (False, False, ["temperature"])
    assert recorded.context_window == 8192
    assert SECRET_KEY not in (root / ENDPOINTS_FILE).read_text()


def test_doctor_on_an_endpoint_that_is_down_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer() as gone:
        url = gone.base_url
    root = tmp_path / "ws"
    build_sample_workspace(root)
    (root / "ovtui.toml").write_text(f'[llm]\nbackend = "openai"\nbase_url = "{url}"\nmax_retries = 0\n')

    assert main(["doctor", str(root)]) == 2
    probing, line = capsys.readouterr().err.splitlines()  # the URL before the wait, and in the reason
    assert probing.startswith(f"probing {url} ")
    assert line.startswith(f"ovtui: error: {url}: [doctor] the model endpoint failed")
    assert "connection error" in line
    assert not (root / ENDPOINTS_FILE).exists()


def test_endpoint_key_keeps_no_credentials() -> None:
    key = endpoint_key("https://user:s3cret@example.com:8443/v1/?api_key=s3cret#x", "m")
    assert key == "https://example.com:8443/v1 m"
    assert json.dumps(key).count("s3cret") == 0


def test_an_offline_workspace_needs_no_endpoint_and_probes_none(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")  # the sample: [llm] backend = "offline"
    done = run_ovtui("doctor", str(root), cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert 'backend = "offline"' in done.stdout and "needs no endpoint" in done.stdout
    assert not (root / ENDPOINTS_FILE).exists()  # nothing was probed, nothing recorded
