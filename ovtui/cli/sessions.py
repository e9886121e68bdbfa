"""``ovtui serve [WORKSPACE]`` (the OpenViking-compatible session API) and ``ovtui commit WORKSPACE
FILE.jsonl`` (commit one conversation headless)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ovtui.cli.common import add_workspace_arguments, run_closing

DEFAULT_PORT = 1933  # OpenViking's default port: an agent configured for it finds ovtui there
QUIET_HELP = "print only the URL, not a line per request and per finished commit"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="serve the session API (OpenViking-compatible) of a workspace")
    add_workspace_arguments(serve)
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1 (loopback)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 = a free port")
    serve.add_argument("--workers", type=int, default=4, help="commits extracted at once")
    serve.add_argument("--api-key-env", help="environment variable holding the bearer key")
    serve.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    serve.set_defaults(handler=run_serve)

    commit = sub.add_parser("commit", help="commit a conversation (JSONL of messages) as a session")
    commit.add_argument("workspace", type=Path)
    commit.add_argument("file", type=Path, help="one message per line: {role, content | parts, peer_id?}")
    commit.add_argument("--session", help="session id (default: the file name without .jsonl)")
    commit.set_defaults(handler=run_commit)


def run_serve(args: argparse.Namespace) -> int:
    from ovtui.servers.base.binding import resolve_api_key
    from ovtui.servers.base.request_log import LineWriter
    from ovtui.servers.base.run import run_server
    from ovtui.servers.openviking.app import create_session_app
    from ovtui.wiring.workspace import Workspace

    api_key = resolve_api_key(args.host, args.api_key_env)
    workspace = Workspace(args.workspace)
    log = None if args.quiet else LineWriter(sys.stdout)
    app = create_session_app(
        workspace,
        api_key=api_key,
        workers=max(1, args.workers),
        host=args.host,
        announce=log.write if log else None,
    )
    run_server(app, args.host, args.port, log=log)
    return 0


def run_commit(args: argparse.Namespace) -> int:
    from ovtui.wiring.workspace import Workspace

    workspace = Workspace(args.workspace)
    outcome = run_closing(workspace, workspace.agent.commit(args.file, args.session))
    print(json.dumps(outcome.task_result(), ensure_ascii=False))
    return 1 if outcome.errors else 0
