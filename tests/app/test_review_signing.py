"""The Review screen signs approvals as the CLI does, with ``[review] key`` (or ssh-agent): the
approval in the plan carries a signature that verifies against ``[review] signers``; without a key
to sign with, the approval is refused in one line on screen and nothing is recorded."""

from __future__ import annotations

import pytest
from app_support import MakeApp, notifications, park_demo_plan, press_and_settle
from signing_support import keypair, public_line

from ovtui.core.allowed_signers import load_signers
from ovtui.core.reviewers import NAMESPACE, item_digest, statement
from ovtui.wiring.workspace import Workspace


def signing_workspace(workspace: Workspace, with_key: bool) -> Workspace:
    key = keypair(workspace.root.parent / "keys", "ana")
    (workspace.root / "allowed_signers").write_text(f"ana {public_line(key)}\n", encoding="utf-8")
    config = workspace.config.model_copy(deep=True)
    config.review.reviewer = "Ana"
    config.review.signers = "allowed_signers"
    config.review.key = str(key) if with_key else None
    return Workspace(workspace.root, config)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_approving_in_the_app_signs_with_the_configured_key(
    workspace: Workspace, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    ana = signing_workspace(workspace, with_key=True)
    pending = park_demo_plan(ana)
    app = make_app(ana)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, "2", "a")
    decision = ana.review.pending_plan(pending.plan_id).decisions[0]
    assert decision.decision == "approved"
    [approval] = decision.approvals
    assert approval.reviewer == "ana" and approval.signature is not None
    item = pending.plan.items[0]
    signed = statement(pending.plan_id, 0, None, item_digest(item), "approved", "ana", approval.at)
    signers = load_signers(ana.root / "allowed_signers", "allowed_signers")
    assert signers.verify("ana", approval.signature, NAMESPACE, signed, approval.at) == approval.key


async def test_without_a_key_the_app_refuses_the_approval_in_one_line(
    workspace: Workspace, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    ana = signing_workspace(workspace, with_key=False)
    pending = park_demo_plan(ana)
    app = make_app(ana)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2", "a")
    assert any("no key to sign the approval with" in n for n in notifications(messages))
    assert ana.review.pending_plan(pending.plan_id).decisions[0].decision == "pending"
