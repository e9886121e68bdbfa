"""The sample agent's plain-English lines, read as it reads them (its verb phrases and situations),
are the directives its rollouts are held to — and a rollout of the agent itself follows them."""

from __future__ import annotations

import json

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Experience, ExperienceSet, Message, PolicyStatus, TextPart, ToolPart
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.environment import SampleEnvironment
from ovtui.plugins.adherence import Directive
from ovtui.train.adherence.checker import check
from ovtui.train.adherence.recorder import DirectiveReader

CONTENT = """## Situation
- The customer wants to cancel a booking.
## Approach
- Look up the booking before you cancel it
- Ask them to confirm before cancelling anything
## Reflect
- Never hand out travel credit when the customer asks for compensation
- Once the booking is cancelled, send them a confirmation
- Be warm
"""


def tool(name: str, output: object) -> Message:
    part = ToolPart(tool_id=name, tool_name=name, tool_input={}, tool_output=json.dumps(output))
    return Message(role="assistant", parts=[part])


def test_plain_english_lines_are_directives() -> None:
    reader = DirectiveReader(SampleEnvironment())
    assert list(reader.directives(CONTENT)) == [
        Directive(
            "before",
            ("get_reservation", "cancel_reservation"),
            (),
            "Look up the booking before you cancel it",
        ),
        Directive("confirm", ("cancel_reservation",), (), "Ask them to confirm before cancelling anything"),
        Directive(
            "never",
            ("issue_travel_credit",),
            ("request.compensation=true",),
            "Never hand out travel credit when the customer asks for compensation",
        ),
        Directive(
            "after",
            ("send_confirmation", "cancel_reservation"),
            (),
            "Once the booking is cancelled, send them a confirmation",
        ),
        Directive("unchecked", (), line="Be warm"),
    ]
    # The situation is what the request asked: compensation asked for, credit given, is a violation.
    asked = [Message(role="user", parts=[TextPart(text="Cancel R1 and I want compensation for this mess!")])]
    path = reader.trajectory([*asked, tool("issue_travel_credit", {"ok": True})])
    never = reader.directives(CONTENT)[2]
    assert check(never, path) == "violated"
    calm = reader.trajectory([Message(role="user", parts=[TextPart(text="Please cancel R1.")])])
    assert check(never, calm) == "not_applicable"


def test_the_agent_follows_what_it_reads() -> None:
    environment = SampleEnvironment()
    reader = DirectiveReader(environment)
    policy = ExperienceSet(
        root_uri="viking://user/default/memories/experiences",
        policies=[
            Experience(
                name="booking_cancellation",
                uri="viking://user/default/memories/experiences/booking_cancellation.md",
                version=1,
                status=PolicyStatus.PRODUCTION,
                content=CONTENT,
            )
        ],
    )
    cases = [c for c in environment.cases("train") if c.name.startswith("booking_cancellation")]
    done = SampleAgentExecutor().execute_sync(cases, policy, ExecutionContext(policy_snapshot_id="t"))
    for rollout in done:
        path = reader.trajectory(rollout.messages)
        verdicts = {d.line: check(d, path) for d in reader.directives(CONTENT)}
        assert "violated" not in verdicts.values(), (rollout.case.name, verdicts)
        assert verdicts["Be warm"] == "unchecked"
    followed = [
        check(d, reader.trajectory(r.messages)) == "followed"
        for r in done
        for d in reader.directives(CONTENT)
    ]
    assert cases and any(followed)
