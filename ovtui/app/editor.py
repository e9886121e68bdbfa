"""The seam to ``$EDITOR``: a function from the text to edit to the edited text (None: unchanged).
An editor that cannot start, or that exits with a failure status (``:cq`` in vim, a crash), raises
``OvtuiError`` saying so: its file is not taken as an edit, and "unchanged" would hide that it failed.

The real one suspends the app; ``App.suspend`` raises under ``run_test``, so Pilot tests pass their
own, and ``edit_in_editor`` is tested with a real editor process and no app.

The file handed to the editor ends with a newline, as editors and ``echo >>`` expect (a line they
append would otherwise glue onto the last one); exactly that one newline is stripped on the way back.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from textual.app import App

from ovtui.core.errors import OvtuiError

Editor = Callable[[str], "str | None"]


def editor_command() -> list[str]:
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def to_editor(text: str) -> str:
    return text + "\n"


def from_editor(text: str) -> str:
    return text.removesuffix("\n")


def edit_in_editor(
    text: str,
    command: list[str],
    pause: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> str | None:
    """Run ``command FILE`` on a temporary copy of ``text`` and return the file as it left it."""
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False, encoding="utf-8") as handle:
        handle.write(to_editor(text))
        path = Path(handle.name)
    try:
        # Nothing may raise inside pause(): Textual's suspend does not resume the app on an exception,
        # so an editor that cannot start once left a blank terminal that no key could leave.
        with pause():
            try:
                finished: subprocess.CompletedProcess[bytes] | OSError = subprocess.run(
                    [*command, str(path)], check=False
                )
            except OSError as exc:
                finished = exc
        if isinstance(finished, OSError):
            reason = finished.strerror or str(finished)
            raise OvtuiError(f"cannot run the editor {shlex.join(command)!r} ($VISUAL or $EDITOR): {reason}")
        if finished.returncode != 0:
            raise OvtuiError(
                f"the editor {shlex.join(command)!r} exited with status {finished.returncode}: "
                "the edit was not saved"
            )
        return from_editor(path.read_text(encoding="utf-8"))
    finally:
        path.unlink(missing_ok=True)


def external_editor(app: App[Any]) -> Editor:
    def edit(text: str) -> str | None:
        return edit_in_editor(text, editor_command(), app.suspend)

    return edit
