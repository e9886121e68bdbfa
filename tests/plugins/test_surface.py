"""The plug-in surface: every public name is the kernel's own object, imported on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ovtui.plugins as surface
from ovtui.core import domain
from ovtui.memory import search


def test_every_public_name_resolves_to_the_object_it_names() -> None:
    for name in surface.__all__:
        assert getattr(surface, name) is not None, name
    assert surface.Case is domain.Case
    assert surface.lexical_tokens is search.tokenize
    assert set(surface.__all__) <= set(dir(surface))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Engine'"):
        surface.Engine  # noqa: B018


def test_the_surface_loads_what_a_plug_in_uses_and_nothing_more() -> None:
    probe = (
        "import sys\nfrom ovtui.plugins import EnvironmentDefaults, PluginConfig\n"
        "heavy = ('openai', 'ovtui.llm.client', 'ovtui.wiring', 'ovtui.train')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
