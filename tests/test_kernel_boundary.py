"""Only ovtui/app may import Textual: the kernel must run headless (CLI, CI, a server) without it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ovtui"
APP = PACKAGE / "app"


def textual_imports(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name == "textual" or name.startswith("textual.") for name in names):
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_app_imports_textual():
    offenders = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if APP not in path.parents and (lines := textual_imports(path))
    }
    assert offenders == {}


def test_the_check_sees_the_app_import_textual():
    assert textual_imports(APP / "app.py")  # guards the walker itself against silently finding nothing
