"""The public API of ``ovtui``: every name of ``__all__`` is the kernel's own object, imported only
when first used, so ``import ovtui`` and ``python -m ovtui --help`` stay light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ovtui
from ovtui.core import domain, interfaces
from ovtui.train.reports import RunReport
from ovtui.wiring.workspace import TrainOptions, Workspace


def test_each_public_name_is_the_kernels_own() -> None:
    own = {"Workspace": Workspace, "TrainOptions": TrainOptions, "RunReport": RunReport}
    for name in ovtui.__all__:
        kernel = own.get(name) or getattr(domain, name, None) or getattr(interfaces, name)
        assert getattr(ovtui, name) is kernel, name
    assert {"Case", "Rollout", "ExperienceSet", "RolloutExecutor", "PolicyTrainer"} <= set(ovtui.__all__)
    assert set(ovtui.__all__) <= set(dir(ovtui))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        ovtui.Nothing  # noqa: B018


def test_importing_ovtui_loads_none_of_its_modules() -> None:
    probe = "import sys, ovtui; print(sorted(m for m in sys.modules if m.startswith('ovtui')))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "['ovtui']", result.stderr


def test_help_loads_neither_the_app_the_servers_nor_the_model_client() -> None:
    heavy = ("textual", "fastapi", "uvicorn", "openai", "mcp", "ovtui.wiring.workspace", "ovtui.core.domain")
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['ovtui', '--help']\n"
        "try:\n    runpy.run_module('ovtui', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"print('loaded:', *(m for m in {heavy!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage: ovtui" in result.stdout
    assert result.stdout.splitlines()[-1] == "loaded:"
