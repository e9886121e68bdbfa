"""A big workspace: thousands of generated experiences and history records on top of the sample one.

For the benchmarks and the tests of big lists. Files are written plainly, without the store's journal
and fsyncs (5,000 records would take a minute): this is generated data, never a person's.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from ovtui.core.fileformat import render_memory
from ovtui.memory.history import HistoryEntry, new_history_id
from ovtui.memory.memory_diff import FileChange, build_memory_diff
from ovtui.storage.paths import INDEX_FILE, RECORD_FILE, WorkspacePaths

EXPERIENCES_DIR = "memories/experiences"


def experience_name(index: int) -> str:
    return f"generated_{index % 100_000:05d}"


def experience_text(index: int) -> str:
    return (
        f"## Situation\n- Customer request of kind {index % 97}\n## Approach\n- Look up the account {index}\n"
        f"- Confirm the details before any change\n## Reflect\n- ALWAYS restate the outcome ({index % 13})"
    )


def experience_fields(name: str, version: int) -> dict[str, object]:
    return {"experience_name": name, "memory_type": "experiences", "status": "production", "version": version}


def write_experiences(root: Path, count: int) -> None:
    """``generated_00000.md`` … in the workspace's experiences folder."""
    folder = root / EXPERIENCES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = experience_name(i)
        text = render_memory(experience_text(i), experience_fields(name, 1))
        (folder / f"{name}.md").write_text(text, encoding="utf-8")


def write_history(
    root: Path, count: int, *, start: datetime | None = None, step: timedelta = timedelta(milliseconds=1)
) -> list[str]:
    """``count`` apply records (each updates one generated experience), appended to the index; their
    ids in the order written. ``start`` dates them ``start``, ``start + step``, … (else: now)."""
    paths = WorkspacePaths(root)
    prefix = f"{paths.uri_prefix}{EXPERIENCES_DIR}/"
    paths.history.mkdir(exist_ok=True)
    ids, lines = [], []
    for i in range(count):
        name = experience_name(i)
        before = render_memory(experience_text(i), experience_fields(name, 1))
        after = render_memory(experience_text(i) + f"\n- learned in record {i}", experience_fields(name, 2))
        record = build_memory_diff([FileChange(f"{prefix}{name}.md", "experiences", before, after)])
        record_id = new_history_id(None if start is None else start + i * step)
        (paths.history / record_id).mkdir()
        (paths.history / record_id / RECORD_FILE).write_text(record.render(), encoding="utf-8")
        ids.append(record_id)
        lines.append(HistoryEntry.from_record(record_id, record).line())
    with open(paths.history / INDEX_FILE, "a", encoding="utf-8") as index:
        index.write("".join(lines))
    return ids


TRAJECTORIES_DIR = "memories/trajectories"


def trajectory_text(index: int) -> str:
    return (
        f"## Task\n- Customer request of kind {index % 97} about account {index % 10_000}\n## Steps\n"
        f"1. get_customer\n2. step {index % 31}\n## Outcome\n- {'success' if index % 3 else 'failure'}"
    )


def write_trajectories(root: Path, count: int) -> None:
    """``generated_00000_20261201000000.md`` … in the workspace's trajectories folder."""
    folder = root / TRAJECTORIES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = f"generated_{i:06d}"
        fields = {"trajectory_name": name, "memory_type": "trajectories", "outcome": "success"}
        (folder / f"{name}_20261201000000.md").write_text(
            render_memory(trajectory_text(i), fields), encoding="utf-8"
        )
