"""ContentHashPolicySnapshotter: a stable id for what a policy set says, not when it was read."""

from __future__ import annotations

import hashlib
import json

from ovtui.core.domain import ExperienceSet


class ContentHashPolicySnapshotter:
    prefix = "policy-snapshot"

    async def snapshot(self, policy_set: ExperienceSet) -> str:
        return self.snapshot_id(policy_set)

    def snapshot_id(self, policy_set: ExperienceSet) -> str:
        digest = hashlib.sha256()
        for policy in sorted(policy_set.policies, key=lambda p: p.uri):
            record = [policy.name, policy.uri, policy.version, policy.status.value, policy.content]
            digest.update(json.dumps(record, ensure_ascii=False).encode("utf-8"))
            digest.update(b"\x1e")
        return f"{self.prefix}:{digest.hexdigest()[:16]}"
