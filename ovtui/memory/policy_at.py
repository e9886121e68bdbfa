"""A policy to compare, named as a person names it: ``current``, a history record (the experiences
right after it), or a folder of experience files. Built in memory; nothing is written.

The experiences right after a record are today's files with every later record undone, newest
first: an add taken out, an update's ``before`` and a delete's content put back (reverts and
session commits are records like the others, so they are undone too). A change made by hand,
outside any record, is in today's files and so in every past policy rebuilt this way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ovtui.core.bounds import MAX_MEMORY_FILE_BYTES
from ovtui.core.domain import Experience, ExperienceSet
from ovtui.core.errors import MemoryFormatError, OvtuiError
from ovtui.core.experience_files import experience_from_file
from ovtui.core.fileformat import parse_memory
from ovtui.core.names import validate_name
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES
from ovtui.storage.reading import read_bounded

CURRENT = "current"


@dataclass(frozen=True)
class NamedPolicy:
    """A policy and how it was named: ``current``, ``history/<id>`` or the folder's path."""

    label: str
    policy_set: ExperienceSet


def _experience(text: str, uri: str, source: str) -> Experience:
    return experience_from_file(parse_memory(text, source=source, uri=uri))


def _assemble(store: MemoryStore, texts: dict[str, str], source: str) -> ExperienceSet:
    root = store.type_uri(EXPERIENCES)
    policies = [_experience(texts[name], f"{root}/{name}", f"{source}: {name}") for name in sorted(texts)]
    return ExperienceSet(root_uri=root, policies=policies)


def _current_texts(store: MemoryStore) -> dict[str, str]:
    return {path.name: store.read_text(path) for path in store.list_paths(EXPERIENCES)}


def policy_after_record(store: MemoryStore, ref: str) -> NamedPolicy:
    """The experiences as they were right after record ``ref`` (an id or a unique part of one)."""
    history = HistoryStore(store.paths)
    record_id = history.resolve(ref)
    history.get(record_id)  # a record that does not exist is named here, not silently "now"
    prefix = store.type_uri(EXPERIENCES) + "/"
    texts = _current_texts(store)
    later = sorted((e.id for e in history.list() if e.id > record_id and not e.dry_run), reverse=True)
    for later_id in later:
        operations = history.get(later_id).operations
        for add in operations.adds:
            if add.uri.startswith(prefix):
                texts.pop(add.uri[len(prefix) :], None)
        for update in operations.updates:
            if update.uri.startswith(prefix):
                texts[update.uri[len(prefix) :]] = update.before
        for delete in operations.deletes:
            if delete.uri.startswith(prefix):
                texts[delete.uri[len(prefix) :]] = delete.deleted_content
    # Only files right in the folder are experiences (a record's URI may name a deeper path).
    texts = {name: text for name, text in texts.items() if "/" not in name and name.endswith(".md")}
    return NamedPolicy(f"history/{record_id}", _assemble(store, texts, f"history/{record_id}"))


def policy_from_folder(store: MemoryStore, folder: Path) -> NamedPolicy:
    """The experience files of ``folder`` (``*.md`` right in it), as if they were the workspace's:
    each name checked by the name rule, each file read within the memory file limit."""
    texts: dict[str, str] = {}
    with os.scandir(folder) as entries:
        names = sorted(e.name for e in entries if e.name.endswith(".md") and not e.name.startswith("."))
    for name in names:
        path = folder / name
        if not path.is_file():
            continue
        validate_name(name[:-3], what=f"experience file name in {folder}")
        data = read_bounded(path, MAX_MEMORY_FILE_BYTES, what="an experience file", shown=str(path))
        try:
            texts[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise MemoryFormatError(str(path), "is not valid UTF-8") from None
    if not texts:  # comparing against nothing would run silently as an empty policy
        raise OvtuiError(f"{folder} holds no experience file (*.md): not a policy to compare")
    return NamedPolicy(str(folder), _assemble(store, texts, str(folder)))


def named_policy(store: MemoryStore, ref: str, current: ExperienceSet) -> NamedPolicy:
    """``current``, a folder of experience files, or a history record; one line saying which
    ``ref`` could have been when it is none of them."""
    if ref == CURRENT:
        return NamedPolicy(CURRENT, current)
    folder = Path(ref).expanduser()
    if folder.is_dir():
        return policy_from_folder(store, folder)
    try:
        return policy_after_record(store, ref)
    except OvtuiError as exc:
        raise OvtuiError(
            f"{ref!r} is not `current`, a folder of experience files or a history record: {exc}"
        ) from None
