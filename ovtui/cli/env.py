"""``ovtui env list|cases|serve|score``: environments by name (every entry point of the
``ovtui.environments`` group) and the benchmark service. The environments and the registry are
imported by the handlers: building the parser loads none of them."""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ovtui.core.config import OvtuiConfig
    from ovtui.plugins.environment import Environment

DEFAULT_PORT = 1944  # the port a benchmark service listens on unless told otherwise


def get_environment(name: str, config: OvtuiConfig | None = None) -> Environment:
    """The environment ``name``, its models from ``config`` when it needs some."""
    from ovtui.wiring.registry import ENVIRONMENTS

    return ENVIRONMENTS.get(name, asked_by="ovtui env")(config)


def default_state_folder(environment: str) -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ovtui" / f"env-{environment}"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = sub.add_parser("env", help="environments: list, cases, serve over HTTP, score recorded rollouts")
    env_sub = env.add_subparsers(dest="env_command", metavar="ENV_COMMAND", required=True)

    listing = env_sub.add_parser("list", help="the environments with their case counts")
    listing.set_defaults(handler=run_list)

    cases = env_sub.add_parser("cases", help="print an environment's cases as JSONL")
    cases.add_argument("environment")
    cases.add_argument("--split", default=None, help="one split (default: all)")
    cases.set_defaults(handler=run_cases)

    serve = env_sub.add_parser("serve", help="serve an environment with the benchmark HTTP protocol")
    serve.add_argument("environment")
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1 (loopback)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 = a free port")
    serve.add_argument("--workers", type=int, default=4, help="executions run at once")
    serve.add_argument("--api-key-env", help="environment variable holding the bearer key")
    serve.add_argument("--state", type=Path, help="folder of the execution store")
    serve.add_argument(
        "--config",
        type=Path,
        help="ovtui.toml (or its folder) with the models: [llm] for the agent, [user_simulator], [tau2]",
    )
    serve.add_argument("--quiet", action="store_true", help="print only the URL, not a line per request")
    serve.set_defaults(handler=run_serve)

    score = env_sub.add_parser("score", help="score recorded rollouts (JSONL) without running anything")
    score.add_argument("environment")
    score.add_argument("file", help="JSONL of recorded rollouts, '-' for stdin")
    score.set_defaults(handler=run_score)


def run_list(args: argparse.Namespace) -> int:
    from ovtui.plugins.environment import EnvironmentError_
    from ovtui.wiring.registry import ENVIRONMENTS

    for name in ENVIRONMENTS.names():
        try:
            environment = get_environment(name)
        except EnvironmentError_ as exc:
            print(f"{name:<14} unavailable: {exc}")
            continue
        counts = ", ".join(f"{s} {len(environment.cases(s))}" for s in environment.splits())
        print(f"{name:<14} {counts:<22} {environment.description}")
    return 0


def run_cases(args: argparse.Namespace) -> int:
    environment = get_environment(args.environment)
    splits = [args.split] if args.split else environment.splits()
    out = sys.stdout
    for split in splits:
        for case in environment.cases(split):
            out.write(case.model_dump_json() + "\n")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from ovtui.plugins.environment import EnvironmentError_
    from ovtui.servers.base.binding import resolve_api_key
    from ovtui.servers.base.request_log import LineWriter
    from ovtui.servers.base.run import run_server
    from ovtui.servers.benchmark import create_env_app
    from ovtui.storage.jobs import JobStore

    if args.workers < 1:
        raise EnvironmentError_("--workers must be at least 1")
    api_key = resolve_api_key(args.host, args.api_key_env)
    config = None
    if args.config is not None:
        from ovtui.storage.config_file import load_config, load_config_file

        config = load_config(args.config) if args.config.is_dir() else load_config_file(args.config)
    environment = get_environment(args.environment, config)
    store = JobStore(args.state or default_state_folder(environment.name), prefix="rollout_exec_")
    app = create_env_app(environment, store, workers=args.workers, api_key=api_key)
    run_server(app, args.host, args.port, log=None if args.quiet else LineWriter(sys.stdout))
    return 0


def run_score(args: argparse.Namespace) -> int:
    from ovtui.plugins.environment import EnvironmentError_
    from ovtui.plugins.scoring import score_lines
    from ovtui.storage.reading import open_for_reading

    environment = get_environment(args.environment)
    try:
        stream = (
            sys.stdin if args.file == "-" else io.TextIOWrapper(open_for_reading(args.file), encoding="utf-8")
        )
        with stream:
            bad = score_lines(environment, stream, sys.stdout, sys.stderr, source=args.file)
    except (OSError, UnicodeDecodeError) as exc:  # missing, unreadable or binary: one line, no traceback
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise EnvironmentError_(f"{args.file}: cannot read the recorded rollouts: {reason}") from None
    return 1 if bad else 0
