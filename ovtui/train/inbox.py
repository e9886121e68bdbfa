"""Streaming from the inbox: rollout files dropped into ``inbox/rollouts/`` are trained on.

A processed file moves to ``inbox/done/``; a file that is not a valid Rollout, or not a ``.json`` file
at all, moves to ``inbox/rejected/`` next to a ``.reason.txt`` naming the problem. Nothing is ever
deleted. A file a writer is still writing under a temporary name (``.name``, ``*.tmp``, ``*.part``,
an editor's swap file) is left alone until it is renamed into place. A rollout
without an ``evaluation`` is graded by the workspace's evaluator for its case when there is one, and
quarantined with that reason when there is none: learning from an ungraded rollout teaches nothing
(the format is in docs/rollouts.md). Progress (files handled of files seen) is sent as ``progress``
events of stage ``stream``, so a listener shows real counts.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import get_args

from pydantic import BaseModel, ValidationError
from watchfiles import Change, awatch

from ovtui.core.bounds import MAX_ROLLOUT_BYTES
from ovtui.core.domain import Case, Rollout, RolloutTrainingResult
from ovtui.core.errors import OvtuiError
from ovtui.core.events import EventBus
from ovtui.core.interfaces import RolloutEvaluator
from ovtui.core.suggest import did_you_mean
from ovtui.memory.intake import INTAKE_FILE, INTAKE_KEY, content_key, was_taken
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths
from ovtui.storage.reading import read_bounded

Submit = Callable[[Rollout], Awaitable[RolloutTrainingResult]]
EvaluatorFor = Callable[[Case], RolloutEvaluator | None]
STAGE = "stream"
SHOWN_PROBLEMS = 5  # of a file that is not a Rollout, in its reason (the count says how many more)


# Names of a file that is not there yet: a writer's temporary name it renames into place, a
# download in progress, an editor's swap or backup file (and vim's "4913", the probe it writes to
# check that a folder is writable). Such files are left alone, never quarantined half-written.
PARTIAL_SUFFIXES = (".tmp", ".temp", ".part", ".partial", ".crdownload", ".swp", ".swo", ".swx", "~")
VIM_PROBE = "4913"


def is_partial(name: str) -> bool:
    """Whether ``name`` is one a writer gives a file it has not finished (see PARTIAL_SUFFIXES)."""
    emacs_autosave = name.startswith("#") and name.endswith("#")
    return name.startswith(".") or name.endswith(PARTIAL_SUFFIXES) or emacs_autosave or name == VIM_PROBE


REASON_SUFFIX = ".reason.txt"


def _unique(folder: Path, name: str, companion: str = "") -> Path:
    """A path in ``folder`` for ``name`` that no file holds, nor its companion (``name + companion``,
    the reason written next to a quarantined file: it must never land on a file someone dropped)."""

    def free(candidate: str) -> bool:
        taken = os.path.lexists(folder / candidate)
        return not taken and not (companion and os.path.lexists(folder / (candidate + companion)))

    candidate = name
    while not free(candidate):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        candidate = f"{Path(name).stem}.{stamp}{Path(name).suffix}"
    return folder / candidate


def rollout_problems(exc: ValidationError) -> str:
    """Every problem of a file that is not a Rollout (up to ``SHOWN_PROBLEMS``), each at its field;
    an unknown key with the field it was probably meant to be. The first alone hides the rest."""
    problems = []
    for error in exc.errors()[:SHOWN_PROBLEMS]:
        where = ".".join(str(part) for part in error["loc"]) or "document"
        text = f"[{where}] {error['msg']}"
        if error["type"] == "extra_forbidden" and error["loc"]:
            text += did_you_mean(str(error["loc"][-1]), _field_names(error["loc"][:-1]))
        problems.append(text)
    more = exc.error_count() - len(problems)
    return f"{exc.error_count()} problem(s): " + "; ".join(problems) + (f"; and {more} more" if more else "")


def _field_names(location: tuple[int | str, ...]) -> list[str]:
    """The fields of the model at ``location`` within a Rollout (list positions skipped)."""
    model: type[BaseModel] | None = Rollout
    for part in location:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field is not None else None
    return list(model.model_fields) if model is not None else []


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (``X``, ``list[X]``, ``X | None``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


class InboxProcessor:
    # Which inbox folder this processor watches and which files in it are input.
    FOLDER = "rollouts"
    SUFFIX = ".json"
    TAKES = "one Rollout per .json file (docs/rollouts.md); a conversation (.jsonl) goes to inbox/sessions/"

    def __init__(
        self,
        paths: WorkspacePaths,
        submit: Submit,
        events: EventBus,
        evaluator_for: EvaluatorFor | None = None,
    ) -> None:
        self.paths = paths
        self.submit = submit
        self.events = events
        self.evaluator_for = evaluator_for or (lambda case: None)
        self.incoming = paths.inbox / self.FOLDER
        self.done = paths.inbox / "done"
        self.rejected = paths.quarantine
        self._seen: set[Path] = set()  # files in hand (a path leaves once its file moved on)
        self.started = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.processed = 0
        self.rejected_count = 0

    def reject(self, path: Path, reason: str) -> Path:
        self.rejected_count += 1
        self.events.log(f"rejected {self.paths.relative(path)}: {reason}", level="warning")
        target = path
        try:
            target = self._move(path, self.rejected, companion=REASON_SUFFIX)
            reason_path = target.with_name(target.name + REASON_SUFFIX)
            fsio.atomic_write_text(reason_path, reason + "\n", root=self.paths.root)
        except (OvtuiError, OSError) as exc:
            self.events.log(f"could not quarantine {self.paths.relative(path)}: {exc}", level="error")
        return target

    def _move(self, path: Path, folder: Path, companion: str = "") -> Path:
        """Move an inbox file into ``folder`` under a name nothing else holds (nothing is overwritten)."""
        while True:
            target = _unique(folder, path.name, companion)
            try:
                fsio.move_file(path, target, root=self.paths.root)
                return target
            except FileExistsError:
                continue

    def load(self, path: Path) -> Rollout | None:
        """The rollout in an inbox file, or None when the file was rejected (with its reason)."""
        data = self._read(path)
        return None if data is None else self._parse(path, data)

    def _read(self, path: Path) -> bytes | None:
        try:
            return read_bounded(path, MAX_ROLLOUT_BYTES, what="the file", shown=path.name)
        except OvtuiError as exc:
            self.reject(path, str(exc))
        except OSError as exc:
            self.reject(path, f"cannot read: {exc}")
        return None

    def _parse(self, path: Path, data: bytes) -> Rollout | None:
        try:
            return Rollout.model_validate_json(data)
        except ValidationError as exc:
            self.reject(path, f"not a valid Rollout: {rollout_problems(exc)}")
        return None

    def start(self, path: Path) -> None:
        """Begin training on one file in the background (batching needs several in flight)."""
        if path in self._seen or not path.is_file() or not self._directly_in(path):
            return
        if path.suffix != self.SUFFIX:
            self._refuse_other(path)
            return
        self._seen.add(path)
        self.started += 1
        self._progress()
        task = asyncio.create_task(self._handle(path))
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._settled(done, path))

    def _directly_in(self, path: Path) -> bool:
        """Files in folders below the inbox folder are not input (and not quarantined either)."""
        try:
            return path.parent == self.incoming or path.parent.samefile(self.incoming)
        except OSError:
            return False

    def _refuse_other(self, path: Path) -> None:
        """A file of another kind is quarantined with what the folder takes, unless it is one still
        being written under a temporary name (it is looked at again once renamed)."""
        if is_partial(path.name):
            return
        self.started += 1
        self.reject(
            path,
            f"{path.name}: not a {self.SUFFIX} file; inbox/{self.FOLDER}/ takes {self.TAKES}. "
            f"If it is one, rename it to end in {self.SUFFIX} and drop it in again",
        )
        if os.path.lexists(path):  # it could not be moved: in hand, not quarantined again and again
            self._seen.add(path)
        self._progress()

    def _settled(self, task: asyncio.Task[None], path: Path) -> None:
        self._tasks.discard(task)
        # The file moved to done/ or rejected/: a file dropped later under the same name is new
        # input (the next part of a conversation), not one already handled. One that could not
        # be moved stays in hand, so it is not handled again and again.
        if not os.path.lexists(path):
            self._seen.discard(path)

    def _progress(self) -> None:
        self.events.progress(STAGE, self.processed + self.rejected_count, self.started)

    async def _graded(self, path: Path, rollout: Rollout) -> Rollout | None:
        """The rollout with an evaluation: its own, or one from the evaluator for its case."""
        if rollout.evaluation is not None:
            return rollout
        evaluator = self.evaluator_for(rollout.case)
        if evaluator is None:
            self.reject(
                path,
                f"the rollout has no `evaluation`, and this workspace has no evaluator for case "
                f"{rollout.case.name!r} (its rubric criteria are not of a kind it can check): "
                "add the evaluation to the file (see docs/rollouts.md)",
            )
            return None
        try:
            evaluation = await evaluator.evaluate(rollout)
        except Exception as exc:  # a case the evaluator cannot replay is the file's problem
            self.reject(path, f"the rollout has no `evaluation` and grading it failed: {exc}")
            return None
        evaluation.metadata.setdefault("graded_by", "inbox evaluator")
        return rollout.model_copy(update={"evaluation": evaluation})

    async def _handle(self, path: Path) -> None:
        try:
            await self._train(path)
        finally:
            self._progress()

    async def _train(self, path: Path) -> None:
        data = self._read(path)
        if data is None:
            return
        key = content_key(data)
        if was_taken(self.paths, key):  # trained on before a restart, but not moved yet
            self._finish(path, [], taken_before=True)
            return
        parsed = self._parse(path, data)
        rollout = await self._graded(path, parsed) if parsed is not None else None
        if rollout is None:
            return
        rollout.metadata.update({INTAKE_KEY: key, INTAKE_FILE: path.name})
        try:
            result = await self.submit(rollout)
        except Exception as exc:
            self.reject(path, f"training failed: {type(exc).__name__}: {exc}")
            return
        graded = bool(rollout.evaluation and rollout.evaluation.metadata.get("graded_by"))
        self._finish(path, result.errors, gradients=len(result.gradients), evaluated=graded)

    def _finish(
        self,
        path: Path,
        errors: list[str],
        *,
        gradients: int = 0,
        evaluated: bool = False,
        taken_before: bool = False,
        note: str = "",
    ) -> None:
        try:
            self._move(path, self.done)
        except (OvtuiError, OSError) as exc:
            self.events.log(f"could not move {self.paths.relative(path)} to done/: {exc}", level="error")
        if note:
            self.events.log(f"{self.paths.relative(path)}: {note}")
        self.processed += 1
        self.events.emit(
            "inbox_processed",
            file=path.name,
            gradients=gradients,
            evaluated=evaluated,
            errors=errors,
            taken_before=taken_before,
        )

    def scan(self) -> None:
        if self.incoming.is_dir():
            for path in sorted(self.incoming.iterdir()):
                self.start(path)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def watch(self, stop: asyncio.Event) -> None:
        """Process what is there, then every new file until ``stop`` is set. Files still in training
        when it returns finish once the trainer flushes (the caller closes it, then ``drain``s)."""
        fsio.make_dirs(self.incoming, root=self.paths.root)
        self.scan()
        # yield_on_timeout: an empty batch every second triggers a rescan, which catches a file that
        # landed between the first scan and the moment the OS watch was in place.
        async for changes in awatch(
            self.incoming, stop_event=stop, debounce=50, step=20, rust_timeout=1000, yield_on_timeout=True
        ):
            if not changes:
                self.scan()
            for change, name in changes:
                if change in (Change.added, Change.modified):
                    self.start(Path(name))
