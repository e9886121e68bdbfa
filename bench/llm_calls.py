"""Benchmark of the LLM path: calls per rollout, prompt tokens per rollout, wall time vs the ideal.

200 synthetic rollouts go through the three LLM backends — extract (1 call per rollout), propose
(1 call per trajectory), merge (1 call per batch of 8) — and then the review gates' model
contradiction check, as a train run drives them (the product's gradient estimator and plan
optimizer), against the local fake OpenAI server with a fixed latency per call. Every request the
server received is counted, per stage; the contradiction check makes none while the merge call
reports what it sees (one would be made per plan item that has partner rules otherwise). The ideal
wall time is ``calls × latency / max_concurrency``: what a perfectly packed client would need.
Last, on a client of its own (so none of the figures above include it), the adherence judge
(``[adherence] model_judge``) records 48 rollouts: its calls, stage ``adherence``, per rollout with
unchecked lines (the goal: at most 1; a rollout with none costs no call) and its prompt tokens.

Prompt tokens are counted with OpenAI's cl100k encoding (tiktoken) over every request the server
received, as billed: each message (content and the chat format's few tokens per message), the
response format's schema and the tools. They are reported per stage, per call and per rollout, with
the schema's share, in three store states (empty; 5 experiences; 5 experiences each with 11 links in
OpenViking's shape) and for two workloads: tiny synthetic rollouts, and realistic ones
(``ovtui.testing.realistic``: airline conversations with nested JSON tool outputs, one in eight in
Chinese, and experiences as OpenViking writes them). The anchor is OpenViking's tokens per rollout on
an 8-rollout batch of that kind (8,852 / 10,365 / 15,591 cl100k tokens); the goal is at most 0.3x of
them in every state.

tiktoken cannot download its encoding here: the bench reads ``cl100k_base.tiktoken`` from a
``shared/tokenizers/`` folder beside or above the repository (or ``--encoding-file``), checked by
its SHA-256; without one it asks tiktoken (its cache, ``TIKTOKEN_CACHE_DIR``, or the network).
Run from the repository root::

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai

from ovtui.core.config import LLMConfig, TokensConfig
from ovtui.core.domain import (
    Case,
    CriterionResult,
    Experience,
    ExperienceSet,
    Message,
    PatchSemanticGradient,
    PolicyStatus,
    Rollout,
    RolloutAnalysis,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
    Trajectory,
)
from ovtui.core.events import EventBus
from ovtui.core.fileformat import render_memory
from ovtui.llm.client import LLMClient
from ovtui.llm.tokens import TokenCounter, token_counter
from ovtui.memory.ledger_state import ROLLOUT_ID
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import WorkspacePaths
from ovtui.testing import realistic
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.train.adherence.judge import STAGE as ADHERENCE_STAGE
from ovtui.train.adherence.judge import ModelJudge
from ovtui.train.adherence.recorder import AdherenceRecorder, DirectiveReader
from ovtui.train.adherence.store import AdherenceStore
from ovtui.train.backends.llm import LLMGradientProposer, LLMPlanMerger, LLMTrajectoryExtractor
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.gradient_estimator import ExperienceGradientEstimator
from ovtui.train.components.policy_optimizer import PatchMergePolicyOptimizer
from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck, question
from ovtui.train.review.gates.validation import overlay

INTENTS = 10
EXISTING = 5  # intents that already have an experience
BATCH = 8
LINKS = 11
# OpenViking's cl100k prompt tokens per rollout on these inputs and batch (2.125 calls per rollout).
OPENVIKING_TOKENS = {"empty": 8852, "experiences": 10365, "linked": 15591}
GOAL_OF_OPENVIKING = 0.3
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# The chat format's cost per message and for priming the reply (OpenAI's published rule).
TOKENS_PER_MESSAGE = 3
REPLY_PRIMING = 3
TOKEN_ROLLOUTS = 48  # rollouts per extra store state (tokens only)
SECTIONS = "## Situation\n- {intent} requests\n## Approach\n- look the record up first\n## Reflect\n- {rule}"


# --- the scripted model ---------------------------------------------------------------------------
def answer(request: RecordedRequest) -> Reply:
    if request.schema_name is None:  # the floor measurement: a bare call
        return Reply.text("ok")
    system, user = request.messages[0]["content"], request.messages[1]["content"]
    if request.schema_name == "contradictions":  # the check's own call, for an item no merge looked at
        return Reply.json({"contradictions": []})
    if request.schema_name == "adherence":  # the adherence judge: every line it was asked, followed
        asked = re.findall(r"^(\d+): ", user, flags=re.MULTILINE)
        return Reply.json({"verdicts": [{"line": int(n), "verdict": "followed"} for n in asked]})
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
                "contradictions": [],  # it looked, and these scripted rules oppose none
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


# --- counting tokens with cl100k ------------------------------------------------------------------
def find_encoding_file() -> Path | None:
    """``shared/tokenizers/cl100k_base.tiktoken`` beside the repository or in a folder above it."""
    for folder in Path(__file__).resolve().parents:
        candidate = folder / "shared" / "tokenizers" / "cl100k_base.tiktoken"
        if candidate.is_file():
            return candidate
    return None


def load_cl100k(path: Path | None) -> TokenCounter:
    """The cl100k counter through the product's seam: from its rank file (no download), else from
    tiktoken itself; a bench that cannot count with it stops (its figures are cl100k's)."""
    config = TokensConfig(rank_file=str(path), rank_file_sha256=CL100K_SHA256) if path else TokensConfig()
    counter = token_counter(config, Path.cwd())
    if not counter.exact:
        raise SystemExit(f"bench: no cl100k tokenizer: {counter.problem}")
    return counter


def stage_of(body: dict[str, Any]) -> str:
    """Which backend sent a request the server received (the client does not send its stage)."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if name == "trajectories_operations":
        return "extract"
    if name in ("contradictions", "adherence"):
        return str(name)
    system = str(body["messages"][0].get("content") or "")
    return "merge" if "merge a batch" in system else "propose"


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def request_tokens(count: TokenCounter, body: dict[str, Any]) -> dict[str, int]:
    """The prompt tokens one request is billed for: its messages, its schema and its tools."""
    messages = REPLY_PRIMING
    for message in body.get("messages", []):
        messages += (
            TOKENS_PER_MESSAGE
            + count(str(message.get("role", "")))
            + count(str(message.get("content") or ""))
        )
        if message.get("tool_calls"):
            messages += count(compact(message["tool_calls"]))
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    return {
        "messages": messages,
        "schema": count(compact(schema)) if schema is not None else 0,
        "tools": count(compact(body["tools"])) if body.get("tools") else 0,
    }


def token_figures(encoding: TokenCounter, bodies: list[dict[str, Any]], rollouts: int) -> dict[str, Any]:
    """Prompt tokens per rollout, by stage and in all, and the schema's share of them."""
    by_stage: dict[str, dict[str, int]] = {}
    for body in bodies:
        parts = request_tokens(encoding, body)
        stage = by_stage.setdefault(stage_of(body), {"calls": 0, "messages": 0, "schema": 0, "tools": 0})
        stage["calls"] += 1
        for key, value in parts.items():
            stage[key] += value
    total = sum(s["messages"] + s["schema"] + s["tools"] for s in by_stage.values())
    schema = sum(s["schema"] for s in by_stage.values())
    return {
        "prompt_tokens_per_rollout": total / rollouts,
        "prompt_tokens_per_rollout_by_stage": {
            n: (s["messages"] + s["schema"] + s["tools"]) / rollouts for n, s in sorted(by_stage.items())
        },
        "prompt_tokens_per_call_by_stage": {
            n: (s["messages"] + s["schema"] + s["tools"]) / s["calls"] for n, s in sorted(by_stage.items())
        },
        "schema_tokens_per_call_by_stage": {n: s["schema"] / s["calls"] for n, s in sorted(by_stage.items())},
        "schema_share": schema / total if total else 0.0,
    }


# --- the workloads: synthetic (tiny rollouts), realistic (OpenViking's shapes) ------------------
def realistic_workspace(root: Path, existing: int = EXISTING, links: int = 0) -> MemoryStore:
    """Experiences as OpenViking writes them (tags, times, link objects), airline guidance."""
    if existing:
        realistic.write_experiences(root, existing, links)
    else:
        (root / "memories" / "experiences").mkdir(parents=True)
    return MemoryStore.open(root)


def realistic_rollout(i: int) -> Rollout:
    """An 8-rollout batch: seven airline cancellations (nested JSON tool outputs), one in Chinese."""
    return realistic.cjk_rollout() if i % BATCH == BATCH - 1 else realistic.airline_rollout(i)


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
        if links:  # as OpenViking writes them: link objects, empty values included
            fields["links"] = [
                {
                    "from_uri": f"viking://user/default/memories/experiences/{name}.md",
                    "to_uri": f"viking://user/default/memories/trajectories/{name}_case_{n}_20261130120000.md",
                    "link_type": "derived_from",
                    "weight": 1.0,
                    "match_text": None,
                    "description": "",
                    "created_at": "2026-11-30T12:00:00Z",
                }
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


Workload = tuple[Callable[[Path, int, int], MemoryStore], Callable[[int], Rollout]]
WORKLOADS: dict[str, Workload] = {
    "synthetic": (make_workspace, make_rollout),
    "realistic": (realistic_workspace, realistic_rollout),
}


# --- the pipeline, as the shells drive the backends -----------------------------------------------
async def train_batch(
    rollouts: list[Rollout],
    store: MemoryStore,
    policy: ExperienceSet,
    backends: tuple[LLMTrajectoryExtractor, LLMGradientProposer, LLMPlanMerger],
) -> tuple[int, int]:
    extractor, proposer, merger = backends

    estimator = ExperienceGradientEstimator(store, proposer)  # the product's: candidates, merged fields

    async def one(rollout: Rollout) -> list[PatchSemanticGradient]:
        assert rollout.evaluation is not None
        drafts = await extractor.extract(rollout, rollout.evaluation, "")
        trajectories = [
            Trajectory(
                name=draft.name,
                uri=f"{store.paths.uri_prefix}memories/trajectories/{draft.name}_{rollout.case.name}_{n}.md",
                content=draft.content,
                outcome=draft.outcome,
            )
            for n, draft in enumerate(drafts)
        ]
        analysis = RolloutAnalysis(rollout=rollout, evaluation=rollout.evaluation, trajectories=trajectories)
        return await estimator.estimate(analysis, policy)

    per_rollout = await asyncio.gather(*(one(r) for r in rollouts))
    # The product's optimizer (similar experiences found as in a run) and the gate that may call.
    optimizer = PatchMergePolicyOptimizer(store, merger)
    plan = await optimizer.plan([g for gs in per_rollout for g in gs], policy)
    after_plan = overlay(policy, plan.items)
    # Items with partner rules: each would have cost a call of its own before the merge reported.
    carried = sum(question(item, after_plan) is not None for item in plan.items)
    await ModelContradictionCheck(merger.client).mark(plan, policy, EventBus())
    return len(plan.items), carried


# --- the adherence judge, on its own client: the figures above do not include it ------------------
async def run_judge(
    client: LLMClient, server: ServerProcess, encoding: TokenCounter, root: Path
) -> dict[str, Any]:
    """``TOKEN_ROLLOUTS`` rollouts recorded with ``[adherence] model_judge`` on: the synthetic
    experiences' lines name no tool (unchecked offline: one call for the rollout), a rollout that
    used only a checkable one costs none."""
    policy = ExperienceSetLoader(make_workspace(root)).load_sync()
    checkable = Experience(
        name="checked_only",
        uri=f"{policy.root_uri}/checked_only.md",
        version=1,
        status=PolicyStatus.PRODUCTION,
        content="## Approach\n- NEVER call refund_payment",
    )
    policy = policy.model_copy(update={"policies": [*policy.policies, checkable]})
    names = {p.name for p in policy.policies}
    rollouts, with_unchecked = [], 0
    for i in range(TOKEN_ROLLOUTS):
        rollout, intent = make_rollout(i), f"intent_{i % INTENTS}"
        used = [intent, checkable.name] if i % 2 and intent in names else [checkable.name]
        rollout.metadata.update({ROLLOUT_ID: f"judge{i}", "experiences_used": used})
        rollouts.append(rollout)
        with_unchecked += len(used) > 1
    reader = DirectiveReader(None, ("lookup", "refund_payment"))
    recorder = AdherenceRecorder(AdherenceStore(WorkspacePaths(root)), reader, ModelJudge(lambda: client))
    await recorder.record_rollouts(rollouts, policy, [], EventBus())
    stages = client.usage.stages()
    calls = stages[ADHERENCE_STAGE].calls if ADHERENCE_STAGE in stages else 0
    figures = token_figures(encoding, server.drain(), len(rollouts))
    return {
        "rollouts": len(rollouts),
        "rollouts_with_unchecked_lines": with_unchecked,
        "calls": calls,
        "calls_per_rollout_with_unchecked_lines": calls / with_unchecked if with_unchecked else 0.0,
        "prompt_tokens_per_call": figures["prompt_tokens_per_call_by_stage"].get(ADHERENCE_STAGE, 0.0),
    }


def _serve(latency: float, conn: Connection) -> None:
    """Child process: run the fake server; on "drain" send the chat requests' bodies received since
    the last drain, on "stop" its counters."""
    with FakeOpenAIServer(answer, latency=latency) as server:
        conn.send(server.base_url)
        drained = 0
        while conn.recv() == "drain":
            chats = server.chat_requests
            conn.send([r.body for r in chats[drained:]])
            drained = len(chats)
        conn.send((len(server.chat_requests), server.max_in_flight))


class ServerProcess:
    """The server in its own process, so its CPU time does not compete with the client for the GIL."""

    def __init__(self, conn: Connection, base_url: str) -> None:
        self.conn = conn
        self.base_url = base_url
        self.stats: list[int] = []

    def drain(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests received since the last drain, as the server got them."""
        self.conn.send("drain")
        bodies: list[dict[str, Any]] = self.conn.recv()
        return bodies


@contextmanager
def server_process(latency: float) -> Iterator[ServerProcess]:
    parent, child = multiprocessing.get_context("fork").Pipe()
    process = multiprocessing.get_context("fork").Process(target=_serve, args=(latency, child), daemon=True)
    process.start()
    server = ServerProcess(parent, parent.recv())
    try:
        yield server
    finally:
        parent.send("stop")
        server.stats.extend(parent.recv())
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
    return LLMClient(config, http_client=openai.DefaultAioHttpClient if aiohttp else None)


async def run_state(
    client: LLMClient,
    server: ServerProcess,
    encoding: TokenCounter,
    root: Path,
    count: int,
    existing: int,
    links: int,
    workload: str = "synthetic",
) -> dict[str, Any]:
    """Train ``count`` rollouts in batches against a store in one state; calls, tokens and times."""
    workspace, rollout = WORKLOADS[workload]
    store = workspace(root, existing, links)
    policy = ExperienceSetLoader(store).load_sync()
    backends = (
        LLMTrajectoryExtractor(client, store),
        LLMGradientProposer(client, store),
        LLMPlanMerger(client, store),
    )
    rollouts = [rollout(i) for i in range(count)]
    batches = [rollouts[i : i + BATCH] for i in range(0, count, BATCH)]
    started, cpu_started = time.perf_counter(), time.process_time()
    decisions = await asyncio.gather(*(train_batch(b, store, policy, backends) for b in batches))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    stages, total = client.usage.stages(), client.usage.total
    bodies = server.drain()  # counted after the timed part: tokenizing is not the client's work
    return {
        "rollouts": count,
        "batches": len(batches),
        "calls": total.calls,
        "expected_calls": 2 * count + len(batches),  # 1 extract + 1 propose + 1 merge per batch
        **token_figures(encoding, bodies, count),
        "calls_by_stage": {n: u.calls for n, u in stages.items()},
        "wall_s": wall,
        "cpu_s": cpu,
        "plan_items": sum(items for items, _ in decisions),
        "contradiction_checks_in_the_merge_call": sum(carried for _, carried in decisions),
    }


async def main(
    count: int, latency: float, concurrency: int, aiohttp: bool, encoding_file: Path | None
) -> None:
    encoding = load_cl100k(encoding_file)
    states = {"empty": (0, 0), "experiences": (EXISTING, 0), "linked": (EXISTING, LINKS)}
    results: dict[str, dict[str, dict[str, Any]]] = {w: {} for w in WORKLOADS}
    with tempfile.TemporaryDirectory() as tmp, server_process(latency) as server:
        for workload in WORKLOADS:
            for state, (existing, links) in states.items():
                client = make_client(server.base_url, concurrency, aiohttp)
                # The wall-time figure comes from the full-size run.
                timed = (workload, state) == ("synthetic", "experiences")
                figures = await run_state(
                    client,
                    server,
                    encoding,
                    Path(tmp) / workload / state,
                    count if timed else TOKEN_ROLLOUTS,
                    existing,
                    links,
                    workload,
                )
                if timed:
                    figures["floor_s"] = await floor(client, figures["calls"])
                    server.drain()  # the floor's bare calls are no stage's tokens
                await client.aclose()
                figures["share_of_openviking"] = (
                    figures["prompt_tokens_per_rollout"] / OPENVIKING_TOKENS[state]
                )
                results[workload][state] = figures
        client = make_client(server.base_url, concurrency, aiohttp)
        judged = await run_judge(client, server, encoding, Path(tmp) / "adherence")
        await client.aclose()
    requests, peak = server.stats

    main_run = results["synthetic"]["experiences"]
    calls = main_run["calls"]
    ideal = calls * latency / concurrency
    print(f"rollouts={count} latency={latency * 1000:.0f}ms concurrency={concurrency}")
    print(
        f"LLM calls: {calls} (expected {main_run['expected_calls']}) = {calls / count:.3f} per rollout "
        f"(target {1 + 1 + 1 / BATCH:.3f})"
    )
    print("prompt tokens per rollout (cl100k, as billed: messages, response format schema, tools):")
    for workload, by_state in results.items():
        print(f"  {workload} rollouts:")
        for state, figures in by_state.items():
            anchor = OPENVIKING_TOKENS[state]
            by_stage = ", ".join(
                f"{n} {v:.0f}" for n, v in figures["prompt_tokens_per_rollout_by_stage"].items()
            )
            per_call = ", ".join(
                f"{n} {v:.0f}" for n, v in figures["prompt_tokens_per_call_by_stage"].items()
            )
            schema = ", ".join(f"{n} {v:.0f}" for n, v in figures["schema_tokens_per_call_by_stage"].items())
            print(
                f"    {state:<12} {figures['prompt_tokens_per_rollout']:6.0f}  ({by_stage}) = "
                f"{figures['share_of_openviking']:.2f}x OpenViking's {anchor} "
                f"(goal <= {GOAL_OF_OPENVIKING * anchor:.0f})\n"
                f"    {'':<12} per call: {per_call}; schema per call: {schema} "
                f"= {figures['schema_share']:.0%} of the prompt tokens"
            )
    carried = {
        f"{w}/{s}": f["contradiction_checks_in_the_merge_call"]
        for w, b in results.items()
        for s, f in b.items()
    }
    print(f"contradiction checks carried by the merge call (no call of their own): {carried}")
    print(
        f"adherence judge ([adherence] model_judge, its own client, not in the figures above): "
        f"{judged['calls']} calls for {judged['rollouts_with_unchecked_lines']} of {judged['rollouts']} "
        f"rollouts with unchecked lines = {judged['calls_per_rollout_with_unchecked_lines']:.2f} per such "
        f"rollout (goal <= 1), {judged['prompt_tokens_per_call']:.0f} prompt tokens per call"
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
            "workloads": results,
            "peak_in_flight": peak,
            "adherence_judge": judged,
        },
        "floor": {"ideal_s": ideal, "bare_calls_over_ideal": main_run["floor_s"] / ideal},
        "baseline": {"openviking_cl100k_tokens_per_rollout": OPENVIKING_TOKENS},
        "goals": {
            "calls_per_rollout": 1 + 1 + 1 / BATCH,
            "adherence_judge_calls_per_rollout_with_unchecked_lines": 1,
            "wall_over_ideal": 1.2,
            "share_of_openviking": GOAL_OF_OPENVIKING,
            "prompt_tokens_per_rollout": {s: GOAL_OF_OPENVIKING * t for s, t in OPENVIKING_TOKENS.items()},
        },
        "tokenizer": encoding.tokenizer,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--aiohttp", action="store_true", help="use the SDK's aiohttp transport")
    parser.add_argument(
        "--encoding-file", type=Path, default=None, help="cl100k_base.tiktoken (default: shared/tokenizers/)"
    )
    args = parser.parse_args()
    encoding_file = args.encoding_file or find_encoding_file()
    asyncio.run(main(args.rollouts, args.latency, args.concurrency, args.aiohttp, encoding_file))
