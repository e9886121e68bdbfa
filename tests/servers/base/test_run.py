"""A server given a port it cannot listen on: one error line, in a real process."""

from __future__ import annotations

import socket
from pathlib import Path

from cli_support import run_ovtui


def test_a_port_in_use_or_out_of_range_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for given, reason in ((str(port), "in use"), ("99999", "0-65535")):
            done = run_ovtui(
                "env", "serve", "sample", "--port", given, "--state", str(tmp_path), cwd=tmp_path, timeout=60
            )
            assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
            assert done.stderr.startswith(f"ovtui: error: cannot listen on 127.0.0.1 port {given}: ")
            assert reason in done.stderr and done.stdout == ""
