"""``ovtui doctor [WORKSPACE | -w WORKSPACE]``: probe the ``[llm]`` endpoint and print, one line each, what it
supports and its context window; the answer is recorded in ``.ovtui/endpoints.json``, where every
run looks first (so a refused feature is not asked for again)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ovtui.cli.common import add_workspace_arguments, open_workspace, run_closing
from ovtui.core.errors import OvtuiError

if TYPE_CHECKING:
    from ovtui.wiring.services.measures import EndpointReport


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "doctor", help="probe the [llm] endpoint: what it supports and its context window (recorded)"
    )
    add_workspace_arguments(parser)
    parser.set_defaults(handler=run_doctor)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def report_lines(report: EndpointReport) -> list[str]:
    found = report.capabilities
    structured = {
        "json_schema": "json_schema" + (" (strict)" if found.strict else " (strict refused: sent without)"),
        "json_object": "json_object (json_schema refused: the schema goes in the prompt)",
        "text": "plain text (response_format refused: the schema goes in the prompt, one repair round)",
    }[found.format_mode]
    return [
        f"endpoint: {report.base_url} (model {report.model})",
        f"structured output: {structured}",
        f"tools: {_yes(found.tools)}" + ("" if found.tools else " (tool requests go as JSON in the answer)"),
        f"parameters left out: {', '.join(found.dropped_params) or 'none'}",
        f"context window: {report.context_window} tokens ({report.window_source})",
        f"recorded in {report.recorded_in}",
    ]


def run_doctor(args: argparse.Namespace) -> int:
    workspace = open_workspace(args.workspace)
    llm = workspace.config.llm
    if not workspace.uses_model:  # nothing to probe: no endpoint is ever called
        print(
            f'backend = "{llm.backend}" ([llm] in ovtui.toml) calls no model: it needs no endpoint, '
            'so there is nothing to probe. To use one, set [llm] backend = "openai", base_url and model.'
        )
        return 0
    print(f"probing {llm.base_url} (model {llm.model})…", file=sys.stderr, flush=True)
    try:
        report = run_closing(workspace, workspace.measures.doctor())
    except OvtuiError as exc:  # the reason alone does not always say which endpoint it is about
        raise OvtuiError(f"{llm.base_url}: {exc}") from exc
    for line in report_lines(report):
        print(line)
    return 0
