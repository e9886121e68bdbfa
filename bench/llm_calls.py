"""Benchmark of the LLM path: calls per rollout, prompt tokens per rollout, wall time vs the ideal.

200 synthetic rollouts go through the three LLM backends — extract (1 call per rollout), propose
(1 call per trajectory), merge (1 call per batch of 8) — against the local fake OpenAI server with
a fixed latency per call. The ideal wall time is ``calls × latency / max_concurrency``: what a
perfectly packed client would need.

Prompt tokens are counted per stage and per rollout in three store states (empty; 5 experiences;
5 experiences each linked to 11 trajectories), like issue #13's figures. Tokens are ESTIMATED at 4
characters per token over everything billed as prompt (messages, response format, tools): tiktoken
cannot fetch its cl100k encoding offline. The goal is issue #13's: at most 0.3x OpenViking's tokens
per rollout, where ovtui's 4,448 / 5,466 / 6,604 cl100k tokens were about 0.5x of them, so the
goal per state is 0.6x of those figures. Run from the repository root::

    .venv/bin/python bench/llm_calls.py [--rollouts 200] [--latency 0.1] [--concurrency 16]

The last line printed is one JSON object: figures, floor and goals.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai

from ovtui.core.config import LLMConfig
from ovtui.core.domain import (
    Case,
    CriterionResult,
    ExperienceSet,
    Message,
    PatchSemanticGradient,
    Rollout,
    RolloutAnalysis,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
    Trajectory,
)
from ovtui.core.fileformat import MemoryFile, render_memory
from ovtui.llm.client import LLMClient
from ovtui.memory.store import MemoryStore
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.train.backends.llm import LLMGradientProposer, LLMPlanMerger, LLMTrajectoryExtractor
from ovtui.train.components.experience_set_loader import ExperienceSetLoader

INTENTS = 10
EXISTING = 5  # intents that already have an experience
BATCH = 8
LINKS = 11
# Issue #13: ovtui's cl100k prompt tokens per rollout in three store states, about 0.5x OpenViking's.
ISSUE_TOKENS = {"empty": 4448, "experiences": 5466, "linked": 6604}
GOAL_OF_OPENVIKING = 0.3
ISSUE_SHARE_OF_OPENVIKING = 0.5
TOKEN_ROLLOUTS = 48  # rollouts per extra store state (tokens only)
SECTIONS = "## Situation\n- {intent} requests\n## Approach\n- look the record up first\n## Reflect\n- {rule}"


# --- the scripted model ---------------------------------------------------------------------------
def answer(request: RecordedRequest) -> Reply:
    if request.schema_name is None:  # the floor measurement: a bare call
        return Reply.text("ok")
    system, user = request.messages[0]["content"], request.messages[1]["content"]
    if request.schema_name == "trajectories_operations":
        intent = re.search(r"\(task: (\w+)\)", user).group(1)  # type: ignore[union-attr]
        item = {
            "trajectory_name": intent,
            "content": f"## Task\n- {intent}\n## Steps\n1. lookup\n2. act\n## Outcome\n- see evaluation",
            "outcome": "failure" if "passed: no" in user else "success",
            "retrieval_anchor": f"user wants {intent}",
        }
        return Reply.json({"trajectories": [item]})
    if "merge a batch" in system:
        groups: dict[str, list[int]] = {}
        for index, name in re.findall(r"### Proposal \[(\d+)\]: `(\w+)`", user):
            groups.setdefault(name, []).append(int(index))
        items = [
            {
                "experience_name": name,
                "content": SECTIONS.format(intent=name, rule="ALWAYS merge"),
                "source_gradients": indices,
                "rationale": "merged",
            }
            for name, indices in groups.items()
        ]
        return Reply.json({"experiences": items})
    intent = re.search(r"## Trajectory `(\w+)`", user).group(1)  # type: ignore[union-attr]
    if f"/experiences/{intent}.md" in user:  # the candidate was prefetched: patch it
        content = "<<<<<<< SEARCH\n## Reflect\n=======\n## Reflect\n- NEVER skip the lookup\n>>>>>>> REPLACE"
    else:
        content = SECTIONS.format(intent=intent, rule="NEVER guess")
    return Reply.json(
        {"experiences": [{"experience_name": intent, "content": content, "rationale": "lesson"}]}
    )


# --- a synthetic workload -------------------------------------------------------------------------
def make_workspace(root: Path, existing: int = EXISTING, links: int = 0) -> MemoryStore:
    folder = root / "memories" / "experiences"
    folder.mkdir(parents=True)
    for i in range(existing):
        name = f"intent_{i}"
        fields: dict[str, object] = {
            "experience_name": name,
            "memory_type": "experiences",
            "status": "production",
            "version": 1,
        }
        if links:
            fields["derived_from"] = [
                f"viking://user/default/memories/trajectories/{name}_case_{n}_20261130T120000.md"
                for n in range(links)
            ]
        text = render_memory(SECTIONS.format(intent=name, rule="ALWAYS confirm"), fields)
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    return MemoryStore.open(root)


def make_rollout(i: int) -> Rollout:
    intent = f"intent_{i % INTENTS}"
    passed = i % 3 != 0
    case = Case(
        name=f"case_{i}",
        task_signature=intent,
        input={"user_query": f"Please handle {intent} for order {1000 + i}"},
        rubric=Rubric(
            name=intent, criteria=[RubricCriterion(name="correct_action", description="does it right")]
        ),
    )
    messages = [
        Message(role="user", parts=[TextPart(text=case.input["user_query"])]),
        Message(
            role="assistant",
            parts=[
                TextPart(text="Let me look that up."),
                ToolPart(
                    tool_id="t1",
                    tool_name="lookup",
                    tool_input={"order": 1000 + i},
                    tool_output=json.dumps({"order": 1000 + i, "state": "open"}),
                ),
            ],
        ),
        Message(
            role="assistant", parts=[TextPart(text="Done." if passed else "I changed it without asking.")]
        ),
    ]
    evaluation = RubricEvaluation(
        passed=passed,
        score=1.0 if passed else 0.0,
        criterion_results=[
            CriterionResult(criterion_name="correct_action", passed=passed, score=float(passed))
        ],
    )
    return Rollout(case=case, messages=messages, evaluation=evaluation)


# --- the pipeline, as the shells drive the backends -----------------------------------------------
async def train_batch(
    rollouts: list[Rollout],
    store: MemoryStore,
    policy: ExperienceSet,
    backends: tuple[LLMTrajectoryExtractor, LLMGradientProposer, LLMPlanMerger],
) -> int:
    extractor, proposer, merger = backends

    async def one(rollout: Rollout) -> list[PatchSemanticGradient]:
        assert rollout.evaluation is not None
        drafts = await extractor.extract(rollout, rollout.evaluation, "")
        gradients = []
        for n, draft in enumerate(drafts):
            uri = f"{store.paths.uri_prefix}memories/trajectories/{draft.name}_{rollout.case.name}_{n}.md"
            trajectory = Trajectory(name=draft.name, uri=uri, content=draft.content, outcome=draft.outcome)
            analysis = RolloutAnalysis(
                rollout=rollout, evaluation=rollout.evaluation, trajectories=[trajectory]
            )
            candidates = [p for p in policy.policies if p.name == draft.name][:5]
            for proposal in await proposer.propose(trajectory, analysis, candidates):
                before = store.read_uri(store.uri_for_name("experiences", proposal.experience_name))
                after = MemoryFile(
                    uri=store.uri_for_name("experiences", proposal.experience_name),
                    content=proposal.content,
                    fields={"experience_name": proposal.experience_name},
                )
                gradients.append(
                    PatchSemanticGradient(
                        before_file=before,
                        after_file=after,
                        base_version=before.version if before else None,
                        evidence_trajectory_uris=[uri],
                    )
                )
        return gradients

    per_rollout = await asyncio.gather(*(one(r) for r in rollouts))
    decisions = await merger.merge([g for gs in per_rollout for g in gs], policy, [])
    return len(decisions)


def _serve(latency: float, conn: Connection) -> None:
    """Child process: run the fake server until told to stop, then report its counters."""
    with FakeOpenAIServer(answer, latency=latency) as server:
        conn.send(server.base_url)
        conn.recv()
        conn.send((len(server.chat_requests), server.max_in_flight))


@contextmanager
def server_process(latency: float) -> Iterator[tuple[str, list[int]]]:
    """The server in its own process, so its CPU time does not compete with the client for the GIL."""
    parent, child = multiprocessing.get_context("fork").Pipe()
    process = multiprocessing.get_context("fork").Process(target=_serve, args=(latency, child), daemon=True)
    process.start()
    stats: list[int] = []
    try:
        yield parent.recv(), stats
    finally:
        parent.send("stop")
        stats.extend(parent.recv())
        process.join(timeout=5)


async def floor(client: LLMClient, calls: int) -> float:
    """Wall time of the same number of bare calls: the SDK's and this machine's share of the ratio."""
    started = time.perf_counter()
    messages = [{"role": "user", "content": "x" * 8000}]
    await asyncio.gather(*(client.chat("floor", messages) for _ in range(calls)))
    return time.perf_counter() - started


def make_client(base_url: str, concurrency: int, aiohttp: bool) -> LLMClient:
    config = LLMConfig(
        backend="openai",
        base_url=base_url,
        model="fake-model",
        api_key_env="OVTUI_BENCH_NO_KEY",
        max_concurrency=concurrency,
        timeout=30,
    )
    return LLMClient(config, http_client=openai.DefaultAioHttpClient() if aiohttp else None)


async def run_state(client: LLMClient, root: Path, count: int, existing: int, links: int) -> dict[str, Any]:
    """Train ``count`` rollouts in batches against a store in one state; calls, tokens and times."""
    store = make_workspace(root, existing, links)
    policy = ExperienceSetLoader(store).load_sync()
    backends = (
        LLMTrajectoryExtractor(client, store),
        LLMGradientProposer(client, store),
        LLMPlanMerger(client, store),
    )
    rollouts = [make_rollout(i) for i in range(count)]
    batches = [rollouts[i : i + BATCH] for i in range(0, count, BATCH)]
    started, cpu_started = time.perf_counter(), time.process_time()
    decisions = await asyncio.gather(*(train_batch(b, store, policy, backends) for b in batches))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    stages, total = client.usage.stages(), client.usage.total
    return {
        "rollouts": count,
        "batches": len(batches),
        "calls": total.calls,
        "expected_calls": 2 * count + len(batches),  # 1 extract + 1 propose + 1 merge per batch
        "prompt_tokens_per_rollout": total.prompt_tokens / count,
        "prompt_tokens_per_rollout_by_stage": {n: u.prompt_tokens / count for n, u in stages.items()},
        "calls_by_stage": {n: u.calls for n, u in stages.items()},
        "wall_s": wall,
        "cpu_s": cpu,
        "merge_decisions": sum(decisions),
    }


async def main(count: int, latency: float, concurrency: int, aiohttp: bool) -> None:
    states = {"empty": (0, 0), "experiences": (EXISTING, 0), "linked": (EXISTING, LINKS)}
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp, server_process(latency) as (base_url, server_stats):
        for state, (existing, links) in states.items():
            client = make_client(base_url, concurrency, aiohttp)
            timed = state == "experiences"  # the wall-time figure comes from the full-size run
            results[state] = await run_state(
                client, Path(tmp) / state, count if timed else TOKEN_ROLLOUTS, existing, links
            )
            if timed:
                results[state]["floor_s"] = await floor(client, results[state]["calls"])
            await client.aclose()
    requests, peak = server_stats

    main_run = results["experiences"]
    calls = main_run["calls"]
    ideal = calls * latency / concurrency
    print(f"rollouts={count} latency={latency * 1000:.0f}ms concurrency={concurrency}")
    print(
        f"LLM calls: {calls} (expected {main_run['expected_calls']}) = {calls / count:.3f} per rollout "
        f"(target {1 + 1 + 1 / BATCH:.3f})"
    )
    print("prompt tokens per rollout (estimate: 4 chars per token over messages, response format, tools):")
    goals = {}
    for state, figures in results.items():
        openviking = ISSUE_TOKENS[state] / ISSUE_SHARE_OF_OPENVIKING
        goals[state] = GOAL_OF_OPENVIKING * openviking
        figures["share_of_openviking"] = figures["prompt_tokens_per_rollout"] / openviking
        by_stage = ", ".join(f"{n} {v:.0f}" for n, v in figures["prompt_tokens_per_rollout_by_stage"].items())
        print(
            f"  {state:<12} {figures['prompt_tokens_per_rollout']:6.0f}  ({by_stage}) = "
            f"{figures['share_of_openviking']:.2f}x OpenViking's ~{openviking:.0f} "
            f"(goal <= {goals[state]:.0f})"
        )
    print(f"client CPU: {main_run['cpu_s']:.2f}s = {main_run['cpu_s'] / calls * 1000:.1f} ms per call")
    wall = main_run["wall_s"]
    print(f"wall time: {wall:.2f}s; ideal {ideal:.2f}s; ratio {wall / ideal:.2f}x (target <= 1.2x)")
    print(
        f"floor: {calls} bare calls take {main_run['floor_s']:.2f}s = {main_run['floor_s'] / ideal:.2f}x "
        f"the ideal on this machine ({'aiohttp' if aiohttp else 'httpx'} transport)"
    )
    print(f"HTTP requests: {requests} (incl. the floor's); peak in flight: {peak}")
    summary = {
        "bench": "llm_calls",
        "figures": {
            "calls_per_rollout": calls / count,
            "wall_over_ideal": wall / ideal,
            "states": results,
            "peak_in_flight": peak,
        },
        "floor": {"ideal_s": ideal, "bare_calls_over_ideal": main_run["floor_s"] / ideal},
        "baseline": {
            "issue_cl100k_tokens_per_rollout": ISSUE_TOKENS,
            "issue_share": ISSUE_SHARE_OF_OPENVIKING,
        },
        "goals": {
            "calls_per_rollout": 1 + 1 + 1 / BATCH,
            "wall_over_ideal": 1.2,
            "share_of_openviking": GOAL_OF_OPENVIKING,
            "prompt_tokens_per_rollout": goals,
        },
        "token_estimate": "4 chars per token (tiktoken's cl100k encoding is not available offline)",
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--aiohttp", action="store_true", help="use the SDK's aiohttp transport")
    args = parser.parse_args()
    asyncio.run(main(args.rollouts, args.latency, args.concurrency, args.aiohttp))
