"""Errors that name what went wrong and where: a file, a field, a line."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class OvtuiError(Exception):
    """Base of every error the kernel raises on purpose."""


def first_problem(exc: ValidationError, whole: str = "line") -> str:
    """``[field.path] message`` of a pydantic error's first problem (``whole`` when it is about the
    whole input), the one shape every file-and-line error of ovtui uses."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or whole
    return f"[{where}] {first['msg']}"


class MemoryFormatError(OvtuiError):
    def __init__(self, source: str, message: str, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = message
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


class UnsafePathError(OvtuiError):
    """A name or path that would leave the workspace or is not a valid memory name."""


class PatchError(OvtuiError):
    """A SEARCH/REPLACE block that did not match exactly once."""


class LockTimeoutError(OvtuiError):
    """The workspace lock could not be taken in time; the message names the holder."""


class StaleItemError(OvtuiError):
    """A plan item whose target changed after it was planned (compare-and-swap failed)."""


class RevertConflictError(OvtuiError):
    """A file changed after the history record that is being reverted."""

    def __init__(self, message: str, conflicts: list[str] | None = None) -> None:
        super().__init__(message)
        self.conflicts = conflicts or []  # the files (workspace-relative or URIs) that changed


class ConfigError(OvtuiError):
    """ovtui.toml is missing a value or holds a wrong one."""


class LLMError(OvtuiError):
    """A model call that gave no usable answer; subclasses in ``ovtui.llm.errors`` say why."""


class RunCancelled(OvtuiError):
    """The run was cancelled; everything applied so far is consistent and recorded."""
