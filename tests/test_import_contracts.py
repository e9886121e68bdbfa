"""The import contracts of pyproject.toml (import-linter) hold, and they do catch a breach.

CI runs ``lint-imports`` too; this test makes the suite prove it, and guards the contracts
themselves: each is broken on purpose in a copy of the package and must be reported broken.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=project, capture_output=True, text=True, timeout=120
    )


def test_the_contracts_are_kept() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # Through another module: the kernel may not reach Textual by any path.
        ("ovtui/core/events.py", "import ovtui.textual_helper", "The kernel imports neither Textual"),
        ("ovtui/train/engine.py", "import ovtui.app", "The kernel imports neither Textual"),
        ("ovtui/core/domain.py", "from ovtui.core import events", "The domain imports nothing of ours"),
        ("ovtui/memory/store.py", "from ovtui.train import engine", "The layers"),
        ("ovtui/environments/sample/tools.py", "from ovtui.sessions import store", "The layers"),
        ("ovtui/storage/fsio.py", "from ovtui.storage import journal", "No import circle"),
        (
            "ovtui/train/engine.py",
            "from ovtui.train.backends.offline import merge",
            "Only entry points name",
        ),
        ("ovtui/train/engine.py", "from ovtui.train.review.gates import leaks", "The engine imports no gate"),
        # Through another module: the review's Protocols may not bring the plan store (and its gates) in.
        (
            "ovtui/train/review/interfaces.py",
            "from ovtui.train.review import pending",
            "The engine imports no gate",
        ),
        # A plug-in reaching past the surface, into a lower layer the layers would allow.
        ("ovtui/environments/sample/tools.py", "from ovtui.memory import store", "Plug-ins import only the"),
        (
            "ovtui/train/backends/offline/merge.py",
            "from ovtui.train.components import trials",
            "Plug-ins import only the",
        ),
        # Imports for type annotations count: no arrow runs back up, no circle, even for a type.
        (
            "ovtui/environments/tau2_airline/plugin.py",
            "if TYPE_CHECKING:\n    from ovtui.wiring.registry import Registry",
            "The layers",
        ),
        (
            "ovtui/plugins/backends.py",
            "if TYPE_CHECKING:\n    from ovtui.plugins.resources import Backend",
            "No import circle",
        ),
        ("ovtui/wiring/workspace.py", "from ovtui.testing import helpers", "The product never imports"),
        ("ovtui/wiring/workspace.py", "import mcp.server", "Only the servers import the MCP SDK"),
    ],
)
def test_a_breach_is_reported(tmp_path: Path, module: str, line: str, contract: str) -> None:
    shutil.copytree(ROOT / "ovtui", tmp_path / "ovtui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "contract_types.py", tmp_path / "tests" / "contract_types.py")
    (tmp_path / "ovtui" / "textual_helper.py").write_text("import textual\n", encoding="utf-8")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    result = lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout
    assert verdict(result.stdout, contract) == "BROKEN", result.stdout


def test_every_folder_of_the_package_is_a_package_the_contracts_see() -> None:
    """A folder without ``__init__.py`` is a namespace package, which import-linter does not read:
    its imports would break every contract unseen."""
    folders = {p.parent for p in (ROOT / "ovtui").rglob("*.py")}
    assert [f for f in folders if not (f / "__init__.py").exists()] == []


def verdict(report: str, contract: str) -> str:
    """KEPT or BROKEN: the word that follows the contract's name in the summary (names wrap)."""
    text = " ".join(report.split())
    match = re.search(re.escape(contract) + r".*? (KEPT|BROKEN)\b", text)
    assert match is not None, f"contract {contract!r} not in the report"
    return match.group(1)


def loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``code``."""
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_the_command_line_starts_without_what_it_does_not_use() -> None:
    """`ovtui --help` and an offline run load neither the openai client nor a server nor the app;
    `ovtui history` does not load the domain models; the app loads no server (start-up time is most
    of a short command)."""
    heavy = ("openai", "textual", "fastapi", "uvicorn")
    everything = "from ovtui.cli.main import build_parser; build_parser(); import ovtui.wiring.workspace"
    assert loaded_after(everything, heavy) == []
    history = "from ovtui.cli.main import build_parser; build_parser('history'); import ovtui.storage.opening"
    assert loaded_after(history, ("ovtui.core.domain", *heavy)) == []
    assert loaded_after("import ovtui.app.app", ("openai", "fastapi", "uvicorn")) == []
