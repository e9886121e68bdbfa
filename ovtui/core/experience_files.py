"""An experience and its memory file, one to the other: the one mapping the loader, the updater,
the estimator and the backends' prompts all use."""

from __future__ import annotations

from ovtui.core.domain import Experience, PolicyStatus
from ovtui.core.fileformat import EXPERIENCES, MemoryFile
from ovtui.core.names import same_name


def _stem(uri: str) -> str:
    """The file name of a URI without its last suffix, as ``PurePosixPath.stem`` has it (string work
    only: building a path object per file was a fifth of loading 10,000 experiences)."""
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def name_mismatch(memory: MemoryFile) -> str | None:
    """Why a file's ``experience_name`` is not used (it names another file), or None."""
    stem = _stem(memory.uri or "")
    field = memory.fields.get("experience_name")
    if field is None or (isinstance(field, str) and same_name(field, stem)):
        return None
    return (
        f"{memory.uri}: experience_name {field!r} does not match the file name; "
        f"the experience is known by its file, as {stem!r}"
    )


def experience_from_file(memory: MemoryFile) -> Experience:
    """An experience is identified by its file: the name field is used only when it names that
    file (ignoring case, as OpenViking lower-cases file names), so no file can take another's name."""
    uri = memory.uri or ""
    field = memory.fields.get("experience_name")
    name = field if name_mismatch(memory) is None and isinstance(field, str) else _stem(uri)
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
