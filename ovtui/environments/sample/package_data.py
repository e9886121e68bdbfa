"""Files bundled in ``ovtui/environments/sample/data/`` (policy, wordings, starter memories)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def read_text(name: str) -> str:
    return (resources.files("ovtui.environments.sample") / "data" / name).read_text(encoding="utf-8")


def read_json(name: str) -> Any:
    return json.loads(read_text(name))
