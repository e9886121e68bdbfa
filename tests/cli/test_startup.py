"""Building the command line loads no kernel: every command's ``--help`` (and ``ovtui --help``) must
not pay for pydantic, the models of records, the app, the servers or the model client, which every
command would otherwise pay before doing anything (issue #35; bench/cli_start.py measures it)."""

from __future__ import annotations

import json
import subprocess
import sys

from ovtui.cli.main import COMMANDS

# What a parser must never need. A command module imports these inside its handlers.
HEAVY = (
    "pydantic",
    "textual",
    "openai",
    "asyncio",
    "fastapi",
    "mcp",
    "numpy",
    "scipy",
    "logging",
    "importlib.metadata",
    "ovtui.memory.memory_diff",
    "ovtui.storage.config_file",
    "ovtui.core.config",
    "ovtui.train",
    "ovtui.wiring",
    "ovtui.servers",
    "ovtui.app",
)

# One fresh interpreter asks for every command's help, then names the modules it has loaded.
DRIVER = """
import contextlib, io, json, sys
from ovtui.cli.main import main
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(argv)
    assert code == 0 and "usage: ovtui" in out.getvalue(), (argv, code)
print(json.dumps(sorted(sys.modules)))
"""


def test_no_command_help_loads_the_kernel() -> None:
    argvs = [["--help"], *([name, "--help"] for name in COMMANDS), ["app", "--help"]]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(argvs)], capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(done.stdout))
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == [], f"building the parsers imported {heavy}"
    # The test itself would pass if nothing ran: the command modules must have been loaded.
    assert {f"ovtui.cli.{module.__name__.rsplit('.', 1)[1]}" for module in COMMANDS.values()} <= loaded


def test_version_is_read_when_asked() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ovtui", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("ovtui ") and done.stdout.strip() != "ovtui unknown"
