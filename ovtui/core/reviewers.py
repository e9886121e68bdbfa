"""Who a reviewer is, and what a signed decision says.

One person is one reviewer: a name is compared as Unicode NFKC, case-folded, trimmed, its inner
white space collapsed (``Alice``, ``alice `` and ``ａｌｉｃｅ`` are one reviewer), and an empty name
is refused. With ``[review] signers`` a decision also carries the reviewer's SSH signature over
``statement``: the plan, the item, the hunks, a digest of the item as proposed, the decision, the
reviewer and the time, so a signature copied to another item, other hunks or changed content does
not verify.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata

from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import OvtuiError

# The SSHSIG namespace of a review decision (``ssh-keygen -Y sign -n ovtui-review``).
NAMESPACE = "ovtui-review"
MAX_NAME = 64


def reviewer_name(text: str) -> str:
    """``text`` as the one name of its person (NFKC, case-folded, trimmed, white space collapsed);
    an empty name, or one with a control character, raises ``OvtuiError``."""
    name = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    if not name:
        raise OvtuiError("the reviewer's name is empty: give a name (--reviewer NAME or [review] reviewer)")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise OvtuiError(f"reviewer {name!r}: a name holds no control or format character")
    if len(name) > MAX_NAME:
        raise OvtuiError(f"reviewer {name[:20]!r}…: a name is at most {MAX_NAME} characters")
    return name


def item_digest(item: PolicyPlanItem) -> str:
    """sha256 of what an item proposes (its target, kind and both texts): an approval signs it, so
    an approval stops counting when the proposal is changed."""
    proposal = {
        "memory_type": item.memory_type,
        "peer_id": item.peer_id,
        "target_name": item.target_name,
        "target_uri": item.target_uri,
        "kind": item.kind,
        "before_content": item.before_content,
        "after_content": item.after_content,
    }
    canonical = json.dumps(proposal, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def statement(
    plan_id: str, item: int, hunks: list[int] | None, digest: str, decision: str, reviewer: str, at: str
) -> bytes:
    """The text a reviewer signs for one decision (one field a line, so no field can run into
    another)."""
    covered = "all" if hunks is None else ",".join(map(str, sorted(set(hunks))))
    fields = [
        "ovtui review decision v1",
        f"plan: {plan_id}",
        f"item: {item}",
        f"hunks: {covered}",
        f"content-sha256: {digest}",
        f"decision: {decision}",
        f"reviewer: {reviewer}",
        f"time: {at}",
    ]
    if any("\n" in field or "\r" in field for field in fields):
        raise OvtuiError("a signed decision's fields hold no line break")
    return ("\n".join(fields) + "\n").encode("utf-8")
