"""A small tool-using agent that gets better with use, through ``ovtui serve``.

For each request it:

1. records the user's message in its session (``POST /api/v1/sessions/{id}/messages``), then
   retrieves what ovtui learned from earlier conversations (``POST /api/v1/search/search`` with the
   session id, so the memories served are recorded as used by this session);
2. answers with a model on the ``openai`` SDK (any OpenAI-compatible endpoint: ``OPENAI_BASE_URL``,
   ``OPENAI_API_KEY``), the experiences in its system prompt, its own tools (a tiny help desk) and
   ``read_memory`` to read a memory in full (``GET /api/v1/content/read`` with the session id);
3. records the conversation, tool calls included (``POST …/messages/batch``), commits the session
   (``POST …/commit``) and waits for the commit's task (``GET /api/v1/tasks/{id}``): ovtui learns
   from it.

What a commit learned reaches the next session as the workspace's ``[review] policy`` says. With
the default, ``policy = "ask"``, an experience waits for a person: the commit's result lists its
plan under ``pending_plans`` (also printed as ``waiting_for_review``), and the next session
retrieves it once it is approved and applied::

    ovtui review show PLAN -w my-workspace                  # what it would write
    ovtui review approve PLAN -w my-workspace && ovtui review apply PLAN -w my-workspace

(or the app's Review screen). A workspace with ``policy = "all"`` applies it at once, and the next
session retrieves it without that step.

It prints one JSON line: the session, the memories retrieved, the answer, the plans waiting for
review and the commit's result (its ``memory_diff_uri`` names the audit record of what the commit
wrote).

    ovtui serve my-workspace &          # prints its URL, http://127.0.0.1:1933 by default
    OPENAI_API_KEY=... python examples/agent_loop.py --session s1 \\
        "Please change the email of customer C-17 to kim@example.com"

Only the standard library and the ``openai`` package: copy it and replace the help desk's tools with
your agent's. The endpoints are OpenViking's, so the same loop works against OpenViking itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from openai import OpenAI

MAX_TURNS = 8  # model calls per request: a model that keeps calling tools is stopped here
RETRIEVED = 3  # experiences put in the system prompt

SYSTEM = (
    "You are a help desk agent. Use your tools to do what the customer asks, then answer in one "
    "short sentence. Follow the experiences below, learned from earlier conversations; call "
    "read_memory with a uri to read one in full."
)


# --- the agent's own tools: replace these with yours ------------------------------------------------
def update_email(customer_id: str, email: str) -> dict[str, Any]:
    return {"customer_id": customer_id, "email": email, "updated": True}


def cancel_booking(booking_id: str) -> dict[str, Any]:
    return {"booking_id": booking_id, "status": "cancelled"}


DESK_TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    "update_email": update_email,
    "cancel_booking": cancel_booking,
}


def function(name: str, description: str, **params: str) -> dict[str, Any]:
    properties = {p: {"type": "string", "description": d} for p, d in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(params)},
        },
    }


TOOL_SCHEMAS: list[Any] = [
    function("update_email", "Change a customer's email address.", customer_id="the customer", email="new"),
    function("cancel_booking", "Cancel a booking.", booking_id="the booking reference"),
    function("read_memory", "Read a memory (an experience) in full.", uri="its viking:// uri"),
]


# --- ovtui serve (OpenViking's HTTP API) ------------------------------------------------------------
class Ovtui:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["X-API-Key"] = api_key
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        url = self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            answer = json.loads(exc.read() or b"{}")
        if answer.get("status") != "ok":
            error = answer.get("error") or {}
            raise RuntimeError(f"{method} {path}: {error.get('code')}: {error.get('message')}")
        return answer["result"]

    def retrieve(self, session_id: str, query: str) -> list[dict[str, Any]]:
        found = self.call(
            "POST",
            "/api/v1/search/search",
            {
                "query": query,
                "session_id": session_id,
                "target_uri": "",
                "limit": RETRIEVED,
                "filter": {"op": "must", "field": "memory_type", "conds": ["experiences"]},
            },
        )
        return list(found["memories"])

    def read(self, session_id: str, uri: str) -> str:
        return str(self.call("GET", "/api/v1/content/read", uri=uri, session_id=session_id))

    def commit(self, session_id: str) -> dict[str, Any]:
        accepted = self.call("POST", f"/api/v1/sessions/{session_id}/commit", {})
        if accepted["task_id"] is None:
            return dict(accepted)  # nothing to commit (skipped, with its reason)
        while True:  # each poll is held by the server until the task finishes or 10 s pass
            task = self.call("GET", f"/api/v1/tasks/{accepted['task_id']}", wait=10)
            if task["status"] in ("completed", "failed"):
                return {"status": task["status"], "error": task["error"], **(task["result"] or {})}


# --- the loop -----------------------------------------------------------------------------------------
def system_prompt(experiences: list[dict[str, Any]]) -> str:
    if not experiences:
        return SYSTEM + "\n\nNo experiences yet."
    listed = "\n\n".join(f"uri: {e['uri']}\n{e['abstract']}" for e in experiences)
    return f"{SYSTEM}\n\nExperiences:\n\n{listed}"


def run_tool(ovtui: Ovtui, session_id: str, name: str, arguments: str) -> tuple[str, str]:
    """A tool call's output and status (an error is the model's to read, not the loop's end)."""
    try:
        args = json.loads(arguments or "{}")
        if name == "read_memory":
            return ovtui.read(session_id, str(args["uri"])), "completed"
        return json.dumps(DESK_TOOLS[name](**args)), "completed"
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        return f"Error: {type(exc).__name__}: {exc}", "error"


def answer(ovtui: Ovtui, model: OpenAI, model_name: str, session_id: str, request: str) -> dict[str, Any]:
    ovtui.call("POST", f"/api/v1/sessions/{session_id}/messages", {"role": "user", "content": request})
    experiences = ovtui.retrieve(session_id, request)
    messages: list[Any] = [
        {"role": "system", "content": system_prompt(experiences)},
        {"role": "user", "content": request},
    ]
    recorded: list[dict[str, Any]] = []  # the conversation after the user's message, for ovtui
    reply = ""
    for _ in range(MAX_TURNS):
        completion = model.chat.completions.create(model=model_name, messages=messages, tools=TOOL_SCHEMAS)
        message = completion.choices[0].message
        calls = message.tool_calls or []
        if not calls:
            reply = message.content or ""
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in calls:
            if call.type != "function":
                continue  # a custom tool call: this agent declares none
            name, arguments = call.function.name, call.function.arguments
            output, status = run_tool(ovtui, session_id, name, arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
            if name in DESK_TOOLS:  # what the agent did; its memory reads ovtui recorded itself
                part = {
                    "type": "tool",
                    "tool_id": call.id,
                    "tool_name": name,
                    "tool_input": json.loads(arguments or "{}"),
                    "tool_output": output,
                    "tool_status": status,
                }
                recorded.append({"role": "assistant", "parts": [part]})
    recorded.append({"role": "assistant", "content": reply or "(no answer)"})
    ovtui.call("POST", f"/api/v1/sessions/{session_id}/messages/batch", {"messages": recorded})
    committed = ovtui.commit(session_id)
    return {
        "session_id": session_id,
        "retrieved": [e["uri"] for e in experiences],
        "answer": reply,
        "waiting_for_review": list(committed.get("pending_plans") or []),
        "commit": committed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("request", help="what the customer asks")
    parser.add_argument("--session", required=True, help="this conversation's session id")
    parser.add_argument("--ovtui", default=os.environ.get("OVTUI_URL", "http://127.0.0.1:1933"))
    parser.add_argument("--ovtui-key-env", help="environment variable holding ovtui serve's key")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    args = parser.parse_args(argv)
    key = os.environ.get(args.ovtui_key_env) if args.ovtui_key_env else None
    ovtui = Ovtui(args.ovtui, key)
    result = answer(ovtui, OpenAI(), args.model, args.session, args.request)
    print(json.dumps(result, ensure_ascii=False))
    return 0 if result["commit"].get("status") != "failed" else 1


if __name__ == "__main__":
    sys.exit(main())
