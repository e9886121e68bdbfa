"""ExperienceSetLoader: the experiences directory as an ExperienceSet snapshot."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ovtui.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.memory.fileformat import MemoryFile
from ovtui.workspace.store import MemoryStore

EXPERIENCES = "experiences"


def experience_from_file(memory: MemoryFile) -> Experience:
    uri = memory.uri or ""
    name = str(memory.fields.get("experience_name") or Path(uri).stem)
    metadata = memory.without("experience_name", "version", "status")
    return Experience(
        name=name,
        uri=uri,
        version=memory.version,
        status=PolicyStatus.parse(memory.fields.get("status")),
        content=memory.content,
        metadata=metadata,
    )


def file_from_experience(experience: Experience) -> MemoryFile:
    fields = {
        "experience_name": experience.name,
        "memory_type": EXPERIENCES,
        "status": experience.status.value,
        "version": experience.version,
        **experience.metadata,
    }
    return MemoryFile(uri=experience.uri, content=experience.content, fields=fields)


class ExperienceSetLoader:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def load_sync(self) -> ExperienceSet:
        report = self.store.load_type(EXPERIENCES)
        policies = [experience_from_file(f) for f in report.files]
        problems = [str(p) for p in report.problems]
        return ExperienceSet(
            root_uri=self.store.type_uri(EXPERIENCES),
            policies=policies,
            metadata={"problems": problems} if problems else {},
        ).bind(self.store)

    async def load(self) -> ExperienceSet:
        return await asyncio.to_thread(self.load_sync)
