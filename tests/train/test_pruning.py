"""Pruning checked together before anyone is asked: two copies of one useful experience are each
"no effect" alone, and the plan ``ovtui utility`` offers, applied, never lowers accuracy."""

from __future__ import annotations

from pathlib import Path

from workspace_support import build_sample_workspace

from ovtui.environments.sample.generate import read_cases
from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
from ovtui.train.utility import plan_ablations
from ovtui.wiring.workspace import TrainOptions, Workspace

USEFUL = "refund_request"
COPY = "refund_request_again"
CASES = 40  # enough for "no effect" to be shown (its interval within ±10 pp), not merely unseen


def copy_experience(root: Path) -> None:
    folder = root / "memories" / "experiences"
    text = (folder / f"{USEFUL}.md").read_text(encoding="utf-8")
    marked = f'"experience_name": "{USEFUL}"'
    assert marked in text
    (folder / f"{COPY}.md").write_text(text.replace(marked, f'"experience_name": "{COPY}"'), encoding="utf-8")


async def test_two_copies_of_a_useful_experience_are_never_both_deleted(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    workspace = Workspace(root)
    try:
        trained = await workspace.runs.train(TrainOptions(approve="all", eval_split=None))
        assert trained.history_ids, trained.summary()
        copy_experience(root)
        refunds = [c for c in read_cases(root / "datasets/support/train.jsonl") if c.task_signature == USEFUL]
        cases = [
            refunds[i % len(refunds)].model_copy(update={"name": f"{USEFUL}_{i:02d}"}) for i in range(CASES)
        ]

        async def measured() -> tuple[dict[str, float], str | None, list[str]]:
            policy = await workspace.parts.loader.load()
            chosen = [e for e in policy.policies if e.name in (USEFUL, COPY)]
            plan = plan_ablations(
                policy,
                ContentHashPolicySnapshotter().snapshot_id(policy),
                chosen,
                lambda _: {c.name for c in cases},
                cases,
                ("support", "train", 1),
            )
            outcome = await workspace.measures.utility(plan)
            rates = {e.name: e.with_rate for e in outcome.measured}
            verdicts = [f"{e.name}={e.verdict}" for e in outcome.measured]
            assert all(v.endswith("=none") for v in verdicts), verdicts  # alone, each changes nothing
            return rates, outcome.plan_id, outcome.kept

        before, plan_id, kept = await measured()
        assert set(before.values()) == {1.0}  # the policy passes every case
        assert plan_id is not None
        # Deleting both loses every case: the second one is kept, and said to be redundant.
        assert len(kept) == 1 and "redundant with" in kept[0] and "-100.0%" in kept[0]
        pending = workspace.review.pending_plan(plan_id)
        assert [i.kind for i in pending.plan.items] == ["delete"]
        assert "measured one at a time, checked together" in pending.plan.items[0].metadata["rationale"]
        workspace.review.decide_all(plan_id, "approved")
        applied = await workspace.review.apply_pending(plan_id)
        assert len(applied.deleted_uris) == 1
        left = {e.name for e in (await workspace.parts.loader.load()).policies} & {USEFUL, COPY}
        assert len(left) == 1
        policy = await workspace.parts.loader.load()
        [remaining] = [e for e in policy.policies if e.name in left]
        plan = plan_ablations(
            policy,
            ContentHashPolicySnapshotter().snapshot_id(policy),
            [remaining],
            lambda _: {c.name for c in cases},
            cases,
            ("support", "train", 1),
        )
        after = await workspace.measures.utility(plan)
        [entry] = after.measured
        assert entry.with_rate == 1.0  # applied, the plan lowered no case's accuracy
        assert entry.verdict == "helpful" and after.plan_id is None  # now the one copy is needed
    finally:
        await workspace.aclose()
