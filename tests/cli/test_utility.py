"""``ovtui utility`` as a user runs it: real processes on a trained copy of the sample workspace,
with one experience written to be harmful (it forbids the cancellation its cases need)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_ovtui
from plugin_support import install_distribution
from tokenizer_support import no_tiktoken_download, write_rank_file
from workspace_support import build_sample_workspace

from ovtui.llm.budget import estimate_tokens
from ovtui.train.utility import UTILITY_FILE

EXPERIENCES = "viking://user/default/memories/experiences"
TRAJECTORIES = "viking://user/default/memories/trajectories"
HARMFUL = "cancellation_shortcut"
HARMFUL_BODY = """## Situation
- The request is about: booking cancellation.
- Example request: "Please cancel my reservation <id>. Customer id <id>."
## Approach
- get_customer → get_reservation
## Reflect
- NEVER cancel the reservation.
"""


@pytest.fixture(autouse=True)
def no_tokenizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No tokenizer loads unless a test configures a rank file: the figures are the estimate's on
    any machine (tiktoken would otherwise download its encoding where there is a network)."""
    for name, value in no_tiktoken_download(tmp_path / "tiktoken-cache").items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sample workspace trained its three epochs, every plan applied: its policy passes every
    train case."""
    root = build_sample_workspace(tmp_path_factory.mktemp("utility") / "ws")
    proc = run_ovtui("train", str(root), "--approve", "all", "--no-eval", cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    return root


def with_harmful(trained: Path, root: Path) -> list[str]:
    """A copy of ``trained`` at ``root`` with the harmful experience, learned (its links say) from
    three trajectories of cancellations the customer confirms (which it forbids); their cases."""
    shutil.copytree(trained, root)
    confirming = {case["name"] for case in train_cases(root) if case["input"]["simulated_user"]["confirms"]}
    trajectories = sorted((root / "memories" / "trajectories").glob("booking_cancellation_*.md"))
    # one trajectory of each of three cases (a case trained again in a later epoch has another)
    by_case = {case_of(t): t for t in reversed(trajectories) if case_of(t) in confirming}
    found = [by_case[case] for case in sorted(by_case)[:3]]
    links = [
        {
            "from_uri": f"{EXPERIENCES}/{HARMFUL}.md",
            "to_uri": f"{TRAJECTORIES}/{t.name}",
            "link_type": "derived_from",
        }
        for t in found
    ]
    fields = {"version": 1, "experience_name": HARMFUL, "status": "draft", "links": links}
    text = f"{HARMFUL_BODY}\n<!-- MEMORY_FIELDS\n{json.dumps(fields, indent=2)}\n-->\n"
    (root / "memories" / "experiences" / f"{HARMFUL}.md").write_text(text, encoding="utf-8")
    return sorted(case_of(t) for t in found)


def train_cases(root: Path) -> list[dict[str, Any]]:
    lines = (root / "datasets" / "support" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def case_of(trajectory: Path) -> str:
    fields = trajectory.read_text(encoding="utf-8").split("<!-- MEMORY_FIELDS", 1)[1].rsplit("-->", 1)[0]
    return str(json.loads(fields)["case_name"])


def test_the_estimate_comes_first_and_nothing_runs_unless_confirmed(trained: Path, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    cases = with_harmful(trained, root)
    args = ["utility", "-w", str(root), "--experience", HARMFUL, "--trials", "2"]
    runs_before = sorted((root / "runs").iterdir())
    refused = run_ovtui(*args, cwd=tmp_path, answer="n\n")
    # Its three cases with it twice (the null beside it), with no experience once and without it
    # once, two trials each.
    estimate = (
        f"1 experience(s) on {len(cases)} case(s) of support/train × 2 trial(s): 24 agent run(s)\n"
        f"measuring: {HARMFUL}\n"
        "tokens estimated, not counted: ≈ figures are the estimate (the context budget's: 4 characters "
        "a token, on the high side); cl100k_base is not in tiktoken's cache and its download failed: "
        "ProxyError\n"
    )
    assert refused.returncode == 1 and refused.stdout == estimate + "start? [y/N] not started\n"
    assert not (root / UTILITY_FILE).exists() and sorted((root / "runs").iterdir()) == runs_before
    confirmed = run_ovtui(*args, cwd=tmp_path, answer="y\n")
    assert confirmed.returncode == 0, confirmed.stderr
    assert confirmed.stdout.startswith(estimate + "start? [y/N] ")
    # Three cases lost are too few for a verdict: unknown, and never a delete.
    assert f"{HARMFUL}: unknown (too little evidence either way): Δ -100.0%" in confirmed.stdout
    assert "a verdict needs at least 6" in confirmed.stdout and "proposed for review" not in confirmed.stdout
    tokens = estimate_tokens(f"### {HARMFUL}\n{HARMFUL_BODY.strip()}")
    assert f"; ≈{tokens} tokens per case —" in confirmed.stdout  # an estimate says it is one
    assert f"[1/1] {HARMFUL}: unknown" in confirmed.stderr  # the progress line, terminal or not
    saved = json.loads((root / UTILITY_FILE).read_text(encoding="utf-8"))
    assert saved["experiences"][HARMFUL]["cases"] == cases and saved["experiences"][HARMFUL]["trials"] == 2


def test_json_says_what_too_few_cases_and_many_tests_leave_unknown(trained: Path, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    cases = with_harmful(trained, root)
    proc = run_ovtui(
        "utility", "-w", str(root), "--experience", HARMFUL, "refund_request", "--yes", "--json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    found = {e["name"]: e for e in data["experiences"]}
    harmful, helpful = found[HARMFUL], found["refund_request"]
    assert harmful["cases"] == cases and harmful["verdict"] == "unknown"
    assert (harmful["with_rate"], harmful["without_rate"], harmful["delta"]) == (0.0, 1.0, -1.0)
    assert harmful["p_value"] == 0.25 and harmful["test"] == "exact sign test"  # 3 of 3: 2·½³
    assert harmful["ci"][0] == -1.0 and harmful["ci"][1] > 0  # never [-100%, -100%]
    assert harmful["tokens_per_case"] == estimate_tokens(f"### {HARMFUL}\n{HARMFUL_BODY.strip()}")
    # Six of six lost is p = .031 alone; corrected for the two tests (Benjamini–Hochberg) q = .0625.
    assert helpful["delta"] == 1.0 and len(helpful["cases"]) == 6 and helpful["p_value"] == 1 / 32
    assert helpful["q_value"] == 1 / 16 and helpful["verdict"] == "unknown"
    assert "once 2 tests are corrected" in helpful["why"] and data["correction"] == "Benjamini–Hochberg"
    assert all(c.startswith("refund_request_train_") for c in helpful["cases"])
    # On a common scale: each file's accuracy over all nine cases, its share of the policy's gain.
    assert helpful["effect"] == 6 / 9 and harmful["effect"] == -3 / 9
    assert helpful["share"] is not None and harmful["share"] is not None
    # The policy three times on all nine cases (with, again, with nothing), then each ablation.
    assert data["estimated_calls"] == data["calls"] == 3 * 9 + 3 + 6
    assert harmful["calls"] == 3 and helpful["calls"] == 6 and data["cancelled"] is False
    assert data["plan_id"] is None and data["checked_together"] == ""  # nothing to delete
    saved = json.loads((root / UTILITY_FILE).read_text(encoding="utf-8"))
    assert saved["experiences"][HARMFUL]["policy"] == data["policy"]
    assert saved["experiences"]["refund_request"]["q_value"] == 1 / 16  # saved corrected
    assert data["policy"].startswith("policy-snapshot:") and saved["tokenizer"].startswith("estimate")
    assert data["tokenizer"] == saved["tokenizer"] == harmful["tokenizer"] and data["tokens_estimated"]
    assert (root / "memories" / "experiences" / f"{HARMFUL}.md").exists()


def test_top_takes_the_most_used_a_priced_model_gets_a_cost_bound_and_sealed_splits_are_refused(
    trained: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    shutil.copytree(trained, root)
    config = root / "ovtui.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("[llm]\n", "[llm]\nprompt_price_per_mtok = 3.0\n")
    )
    proc = run_ovtui("utility", "-w", str(root), "--top", "1", cwd=tmp_path, answer="\n")
    assert proc.returncode == 1, proc.stderr
    # The agent retrieves the etiquette experience for every case: it is the most used.
    assert "\nmeasuring: conversation_etiquette\n" in proc.stdout
    assert "\ncost: at most ≈$" in proc.stdout and "not started" in proc.stdout  # estimated tokens
    config.write_text(
        config.read_text(encoding="utf-8").replace('sealed = [\n    "test",\n]', 'sealed = ["train"]')
    )
    sealed = run_ovtui("utility", "-w", str(root), "--yes", cwd=tmp_path)
    assert sealed.returncode == 2 and "Traceback" not in sealed.stderr
    assert sealed.stderr == (
        "ovtui: error: split 'train' is sealed ([evaluation] sealed): utility never scores it "
        "(--split names another)\n"
    )


def test_a_configured_rank_file_counts_the_cost_and_json_names_the_tokenizer(
    trained: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    with_harmful(trained, root)
    sha = write_rank_file(root / "bytes.tiktoken")  # no merges: each UTF-8 byte is one token
    with (root / "ovtui.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[tokens]\nrank_file = "bytes.tiktoken"\nrank_file_sha256 = "{sha}"\n')
    args = ["utility", "-w", str(root), "--experience", HARMFUL, "--trials", "1", "--yes", "--json"]
    proc = run_ovtui(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["tokenizer"] == "cl100k_base (tiktoken)" and data["tokens_estimated"] is False
    assert "tokens counted with cl100k_base (tiktoken)\n" in proc.stderr
    block = f"### {HARMFUL}\n{HARMFUL_BODY.strip()}"
    (harmful,) = data["experiences"]
    assert harmful["tokens_per_case"] == len(block.encode("utf-8")) != estimate_tokens(block)
    assert harmful["tokenizer"] == "cl100k_base (tiktoken)"
    assert f"; {len(block.encode('utf-8'))} tokens per case —" in proc.stderr  # no ≈: counted
    saved = json.loads((root / UTILITY_FILE).read_text(encoding="utf-8"))
    assert saved["tokenizer"] == "cl100k_base (tiktoken)"


GATED_AGENT = '''
    """The sample agent, held before it runs the policy without refund_request until the test
    opens the gate (a named pipe in the workspace)."""

    import asyncio

    from ovtui.environments.sample import SampleAgentExecutor


    class Gated:
        def __init__(self, gate):
            self.gate = gate
            self.agent = SampleAgentExecutor()

        async def execute(self, cases, policy_set, context):
            names = policy_set.by_name()  # the run with no experience at all passes
            if names and "refund_request" not in names:
                await asyncio.to_thread(lambda: open(self.gate, encoding="utf-8").close())
            return await self.agent.execute(cases, policy_set, context)


    def agent(resources):
        return Gated(resources.paths.root / "gate")
'''


def test_ctrl_c_stops_between_batches_and_keeps_what_was_measured(trained: Path, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(trained, root)
    site = install_distribution(
        tmp_path / "site",
        "gated_agent",
        {"plugin.py": GATED_AGENT},
        {"ovtui.agents": {"gated": "gated_agent.plugin:agent"}},
    )
    config = root / "ovtui.toml"
    config.write_text(config.read_text(encoding="utf-8").replace('agent = "sample"', 'agent = "gated"'))
    os.mkfifo(root / "gate")
    names = ["booking_cancellation", "refund_request", "flight_change"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", "utility", "-w", str(root), "--experience", *names, "--yes"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(site)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the first experience is measured; the second waits at the gate
        assert first.startswith("[1/3] booking_cancellation: helpful"), first
        proc.send_signal(signal.SIGINT)
        with open(root / "gate", "w", encoding="utf-8"):
            pass  # the batch under way finishes; the run stops before the next
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "stopped: 2 of 3 measured, saved in" in out and "Traceback" not in err
    saved = json.loads((root / UTILITY_FILE).read_text(encoding="utf-8"))
    assert sorted(saved["experiences"]) == ["booking_cancellation", "refund_request"]
    assert saved["experiences"]["refund_request"]["delta"] == 1.0  # cancelled: never corrected
    assert saved["experiences"]["refund_request"]["q_value"] is None
    reports = [json.loads((r / "report.json").read_text()) for r in (root / "runs").iterdir()]
    [run] = [r for r in reports if r["command"] == "utility"]
    assert run["cancelled"] is True
