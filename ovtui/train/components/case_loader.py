"""Case loaders: a list in memory, or a JSONL dataset (one Case JSON per line)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ovtui.core.domain import Case
from ovtui.core.errors import OvtuiError
from ovtui.core.names import validate_name
from ovtui.plugins.cases import DatasetError, read_cases
from ovtui.storage.paths import WorkspacePaths


class ListCaseLoader:
    def __init__(self, cases: list[Case], batch_size: int = 8) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.cases = cases
        self.batch_size = batch_size

    async def batches(self) -> AsyncIterator[list[Case]]:
        for start in range(0, len(self.cases), self.batch_size):
            yield self.cases[start : start + self.batch_size]

    async def count(self) -> int:
        return len(self.cases)


def datasets_here(paths: WorkspacePaths) -> str:
    """The datasets a workspace has, with their splits: what a mistyped name could have been."""
    found = sorted(
        f"{folder.name} ({', '.join(sorted(split.stem for split in folder.glob('*.jsonl')))})"
        for folder in (paths.datasets.iterdir() if paths.datasets.is_dir() else ())
        if folder.is_dir() and any(folder.glob("*.jsonl"))
    )
    if not found:
        return (
            "this workspace has no datasets yet: add datasets/<name>/{train,validation,test}.jsonl "
            "(docs/cases.md)"
        )
    return f"the datasets here: {'; '.join(found)}"


class JsonlCaseLoader(ListCaseLoader):
    """``datasets/<name>/<split>.jsonl``; a bad line is an error naming the file and line."""

    def __init__(
        self, paths: WorkspacePaths, dataset: str, split: str, batch_size: int = 8, limit: int | None = None
    ):
        validate_name(dataset, what="dataset name")
        validate_name(split, what="split name")
        path = paths.inside(paths.datasets / dataset / f"{split}.jsonl")
        if not path.exists():
            raise OvtuiError(f"{paths.relative(path)}: dataset split not found; {datasets_here(paths)}")
        cases, problems = read_cases(path, display=paths.relative(path))
        if problems:
            raise DatasetError(problems)
        super().__init__(cases if limit is None else cases[:limit], batch_size)
        self.path = path
