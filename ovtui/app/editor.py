"""The seam to ``$EDITOR``: a function from the text to edit to the edited text (None: unchanged).

The real one suspends the app; ``App.suspend`` raises under ``run_test``, so tests pass their own.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App

Editor = Callable[[str], "str | None"]


def external_editor(app: App[Any]) -> Editor:
    def edit(text: str) -> str | None:
        command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False, encoding="utf-8") as handle:
            handle.write(text)
            path = Path(handle.name)
        try:
            with app.suspend():
                finished = subprocess.run([*shlex.split(command), str(path)], check=False)
            if finished.returncode != 0:
                return None
            return path.read_text(encoding="utf-8")
        finally:
            path.unlink(missing_ok=True)

    return edit
