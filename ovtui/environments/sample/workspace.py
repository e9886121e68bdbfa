"""Writes the sample workspace: config, starter memories, the support dataset and the inbox.

The starter experiences cover requests of the domain that the dataset does *not* grade (seats,
baggage, loyalty, ...) plus general etiquette, so the agent starts with a realistic memory and still
has everything about the graded intents to learn. Run ``python -m ovtui.environments.sample.workspace DIR``;
files it owns are rewritten, anything else in DIR (history, runs, .ovtui) is left alone.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import tomli_w

from ovtui.environments.sample.generate import (
    DEFAULT_SEED,
    DEFAULT_TEST_COUNT,
    DEFAULT_TRAIN_COUNT,
    DEFAULT_VALIDATION_COUNT,
    write_dataset,
)
from ovtui.environments.sample.package_data import read_json
from ovtui.plugins import WorkspacePaths, atomic_write_text, contained, render_memory

DATASET = "support"
SAMPLE_CONFIG: dict[str, dict[str, Any]] = {
    "llm": {"backend": "offline"},
    "trainer": {"dataset": DATASET, "agent": "sample", "batch_size": 8, "epochs": 3},
    "review": {"policy": "ask", "dry_run": False},
    # Said, not only defaulted: the sample shows where the held-out test split is sealed.
    "evaluation": {"sealed": ["test"]},
    "workspace": {"user": "default"},
}


def starter_memories() -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = read_json("starter_memories.json")
    return data


def _write(paths: WorkspacePaths, path: Path, text: str) -> None:
    atomic_write_text(path, text, root=paths.root, sync_dir=False)


def write_starter_memories(paths: WorkspacePaths) -> None:
    data = starter_memories()
    experiences_dir = paths.memories / "experiences"
    trajectories_dir = paths.memories / "trajectories"
    links: dict[str, list[dict[str, Any]]] = {}
    for trajectory in data["trajectories"]:
        path = trajectories_dir / f"{trajectory['name']}_{trajectory['timestamp']}.md"
        experience_path = experiences_dir / f"{trajectory['experience']}.md"
        link = {
            "from_uri": paths.uri_prefix + experience_path.relative_to(paths.root).as_posix(),
            "to_uri": paths.uri_prefix + path.relative_to(paths.root).as_posix(),
            "link_type": "derived_from",
            "weight": 1.0,
        }
        links.setdefault(trajectory["experience"], []).append(link)
        fields = {
            "trajectory_name": trajectory["name"],
            "memory_type": "trajectories",
            "outcome": trajectory["outcome"],
            "task_query": trajectory["task_query"],
            "retrieval_anchor": trajectory["retrieval_anchor"],
            "reward": trajectory["reward"],
            "version": 1,
            "backlinks": [link],
        }
        _write(paths, path, render_memory(trajectory["content"], fields))
    for experience in data["experiences"]:
        fields = {
            "experience_name": experience["name"],
            "memory_type": "experiences",
            "status": "production",
            "version": 1,
            "tags": experience["tags"],
            "links": links.get(experience["name"]),
        }
        _write(
            paths, experiences_dir / f"{experience['name']}.md", render_memory(experience["content"], fields)
        )


def write_sample_workspace(
    root: Path,
    *,
    seed: int = DEFAULT_SEED,
    train: int = DEFAULT_TRAIN_COUNT,
    test: int = DEFAULT_TEST_COUNT,
    validation: int = DEFAULT_VALIDATION_COUNT,
) -> None:
    root.mkdir(parents=True, exist_ok=True)
    paths = WorkspacePaths(root, str(SAMPLE_CONFIG["workspace"]["user"]))
    _write(paths, paths.config_file, tomli_w.dumps(SAMPLE_CONFIG))
    write_starter_memories(paths)
    dataset = paths.datasets / DATASET
    for split in ("train", "validation", "test"):  # the generator writes plain files: check first
        contained(dataset / f"{split}.jsonl", root=paths.root)
    write_dataset(dataset, seed, train, test, validation)
    for inbox in ("rollouts", "sessions"):
        _write(paths, paths.inbox / inbox / ".gitkeep", "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the ovtui sample workspace.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    write_sample_workspace(args.folder, seed=args.seed)


if __name__ == "__main__":
    main()
