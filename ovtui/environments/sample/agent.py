"""SampleAgentExecutor: a scripted help-desk agent whose behaviour comes from experience files.

Without experiences it does the obvious thing at once (cancels, refunds, grants a goodwill credit)
and so breaks the policy in exactly the ways the rubric checks. With experiences it retrieves the
ones that fit the request (the ranking every ovtui retriever shares, over its own words; then it
reads each Situation to judge whether it applies), and follows their Approach sequences and Reflect
rules as far as its vocabulary (``guidance``) understands them. Nothing it learns is tied to a
case: rules name tools and situations, and arguments come from the request and from lookups.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ovtui.environments.sample.criteria import is_affirmative
from ovtui.environments.sample.evaluator import grade, seed_database
from ovtui.environments.sample.guidance import (
    ASK,
    USER_CONDITIONS,
    ApproachSequence,
    Guidance,
    Rule,
    guidance_from_content,
)
from ovtui.environments.sample.slip import Slips
from ovtui.environments.sample.tools import TOOL_SPECS, SupportTools, is_read_only
from ovtui.environments.sample.understanding import (
    MAIN_ACTION,
    RequestDetails,
    classify_intent,
    is_general,
    read_request,
)
from ovtui.plugins import (
    ROLLOUT_ID,
    Case,
    ExecutionContext,
    Experience,
    ExperienceSet,
    HotnessMix,
    Message,
    Mix,
    RankedIndex,
    Rollout,
    TextPart,
    ToolPart,
    Use,
    blend,
    new_rollout_id,
    position_key,
    rollout_consumer,
)
from ovtui.plugins.wording.sections import parse_sections
from ovtui.plugins.wording.text import scrub_specifics, tokenize

AGENT_LABEL = "sample_env.scripted"
MAX_TOOL_CALLS = 16
GOODWILL_CREDIT = 100  # what the naive agent hands out to an unhappy customer

_ACTION_WORDS = {
    "cancel_reservation": "cancel the reservation",
    "refund_payment": "refund the payment",
    "issue_travel_credit": "add travel credit to your account",
    "change_flight": "move the flight to the new date",
    "update_contact_email": "update your email address",
    "transfer_to_human": "transfer you to a colleague",
    "send_confirmation": "send you a confirmation",
}


class ExperienceLibrary:
    """The active experiences of a policy set, indexed for retrieval (the ranking every retriever
    shares, over the agent's own words) and parsed once."""

    def __init__(
        self, policy_set: ExperienceSet, *, top_k: int = 5, hotness: HotnessMix | None = None
    ) -> None:
        self.experiences = [p for p in policy_set.policies if p.status.serves]
        self.top_k = top_k
        # Hotness as it stood when the library was built (one read per batch; the batch's own uses
        # do not reorder its later cases, so a batch ranks the same whatever order it runs in).
        weight = hotness.weight if hotness is not None else 0.0
        heat = (
            hotness.scores([p.uri for p in self.experiences]) if hotness is not None and weight > 0 else None
        )
        self._mix: Mix | None = None
        if heat is not None:
            hot = heat

            def mix(keys: list[str], relevance: list[float]) -> list[float]:
                return blend(relevance, [hot[int(k)] for k in keys], weight)

            self._mix = mix
        self._index = RankedIndex.of(
            [
                (position_key(i), tokenize(f"{p.name.replace('_', ' ')} {p.content}"))
                for i, p in enumerate(self.experiences)
            ]
        )
        self._guidance = {p.name: guidance_from_content(p.content, p.name) for p in self.experiences}
        self._topics = {p.name: self._topic(p) for p in self.experiences}

    @staticmethod
    def _topic(experience: Experience) -> str | None:
        """What the experience is about, as the agent reads its name and Situation ("*": everything)."""
        situation = " ".join(
            [experience.name.replace("_", " "), *parse_sections(experience.content).situation]
        )
        topic = classify_intent(situation)
        return "*" if topic is None and is_general(situation) else topic

    def relevant(self, request: RequestDetails) -> list[Experience]:
        """Experiences about every request, then in order of relevance (hotness mixed in by
        ``[retrieval] hotness_weight``) the first ``top_k`` whose Situation is about this kind of
        request."""
        general = [p for p in self.experiences if self._topics[p.name] == "*"]
        if request.intent is None or len(general) == len(self.experiences):
            return general

        def about_it(key: str) -> bool:
            return self._topics[self.experiences[int(key)].name] == request.intent

        # Scrubbed like the experiences' own examples, so a date or an email in the request matches theirs.
        query = tokenize(scrub_specifics(request.text))
        ranked = self._index.rank(query, limit=self.top_k, accept=about_it, mix=self._mix)
        return [self.experiences[int(r.key)] for r in ranked] + general

    def guidance_for(self, experiences: Iterable[Experience]) -> Guidance:
        merged = Guidance()
        for experience in experiences:
            merged.extend(self._guidance[experience.name])
        return merged


class Conversation:
    """One case handled by the agent: the messages, the live database and what the agent knows."""

    def __init__(self, case: Case, guidance: Guidance, request: RequestDetails) -> None:
        self.case, self.guidance, self.request = case, guidance, request
        self.db = seed_database(case)
        self.tools = SupportTools(self.db)
        self.messages = [Message(role="user", parts=[TextPart(text=request.text)])]
        self.records: dict[str, dict[str, Any]] = {}
        self.confirmation: bool | None = None
        self.notes: list[str] = []
        self.done: list[str] = []
        self.changed: list[str] = []
        self._in_progress: list[str] = []

    # --- the plan ---
    def run(self) -> None:
        steps = self._plan()
        for index, step in enumerate(steps):
            if step != ASK:
                self.perform(step)
            elif self.confirmation is None:
                self._ask_about(next((s for s in steps[index + 1 :] if s != ASK), ""))
        for rule in self.guidance.of_kind("require"):
            if self.holds(rule.conditions, rule.tool):
                self.perform(rule.tool)
        self._say(self._closing_text())

    def _plan(self) -> list[str]:
        """The best-fitting Approach sequence; without one, the naive main action."""
        applicable: list[ApproachSequence] = []
        for sequence in self.guidance.sequences:
            # The user's answer is for the conversation to tell: the sequence's own ask step decides.
            situation = [c for c in sequence.conditions if c not in USER_CONDITIONS]
            if all(self.holds((c,), "") for c in situation):
                applicable.append(sequence)
        if applicable:
            # Prefer a sequence made for this exact situation, then the most complete one.
            best = max(
                applicable,
                key=lambda s: (len([c for c in s.conditions if c not in USER_CONDITIONS]), len(s.steps)),
            )
            return list(best.steps)
        main = MAIN_ACTION.get(self.request.intent or "")
        return [main] if main else []

    def perform(self, tool: str) -> None:
        if tool in self.done or tool in self._in_progress or len(self.done) >= MAX_TOOL_CALLS:
            return
        self._in_progress.append(tool)
        try:
            self._perform(tool)
        finally:
            self._in_progress.pop()

    def _perform(self, tool: str) -> None:
        for earlier in self.guidance.predecessors(tool):
            if is_read_only(earlier):
                self.perform(earlier)
        if not is_read_only(tool):
            if self.confirmation is False:
                return
            blocking = next(
                (r for r in self.guidance.forbidding(tool) if self.holds(r.conditions, tool)), None
            )
            if blocking is not None:
                self.notes.append(self._refusal(tool, blocking))
                return
            if self.guidance.gated(tool) and self.confirmation is None and not self._ask_about(tool):
                self.notes.append("As you asked, I have not changed anything.")
                return
        args = self._arguments(tool)
        if args is None:
            self.notes.append(f"I could not {_ACTION_WORDS.get(tool, tool)}: some details are missing.")
            return
        self._call(tool, args)
        for rule in self.guidance.follow_ups(tool):
            if self.holds(rule.conditions, rule.tool):
                self.perform(rule.tool)

    # --- what the agent knows ---
    def holds(self, conditions: Iterable[str], tool: str) -> bool:
        return all(self._holds(c, tool) for c in conditions)

    def _holds(self, condition: str, tool: str) -> bool:
        if condition == "compensation":
            return self.request.mentions_compensation
        if condition in USER_CONDITIONS:
            if self.confirmation is None:
                self._ask_about(tool)
            return self.confirmation is (condition == "user_confirms")
        if "=" in condition:  # a fact in the learner's wording: subject.field=value
            key, value = condition.split("=", 1)
            subject, _, field = key.partition(".")
            record = self._reservation() if subject == "reservation" else self._customer()
            actual = record.get(field) if record else None
            shown = ("true" if actual else "false") if isinstance(actual, bool) else str(actual)
            if record is None:
                return False
            return shown != value[1:] if value.startswith("!") else shown == value
        reservation = self._reservation()
        if reservation is None:
            return False
        return {
            "non_refundable": reservation.get("refundable") is False,
            "refundable": reservation.get("refundable") is True,
            "basic_economy": reservation.get("cabin") == "basic_economy",
            "changeable": reservation.get("cabin") != "basic_economy",
        }.get(condition, False)

    def _customer(self) -> dict[str, Any] | None:
        if "customer" not in self.records and self._customer_id():
            self.perform("get_customer")
        return self.records.get("customer")

    def _reservation(self) -> dict[str, Any] | None:
        if "reservation" not in self.records and self.request.reservation_id:
            self.perform("get_reservation")
        return self.records.get("reservation")

    def _customer_id(self) -> str | None:
        if self.request.customer_id:
            return self.request.customer_id
        reservation = self._reservation()
        return str(reservation["customer_id"]) if reservation else None

    def _arguments(self, tool: str) -> dict[str, Any] | None:
        values: dict[str, Any] = {}
        for param in TOOL_SPECS[tool].params:
            value: Any
            if param == "reservation_id":
                value = self.request.reservation_id
            elif param == "customer_id":
                value = self._customer_id()
            elif param == "amount":
                reservation = self.records.get("reservation")
                value = reservation["price"] if reservation else GOODWILL_CREDIT
            elif param == "new_date":
                value = self.request.new_date
            elif param == "email":
                value = self.request.email
            elif param == "summary":
                value = f"Customer request ({self.request.intent or 'unclassified'}): {self.request.text}"
            else:  # message
                value = (
                    "Your request is done: " + ", ".join(_ACTION_WORDS.get(t, t) for t in self.changed) + "."
                )
            if value is None:
                return None
            values[param] = value
        return values

    # --- talking and acting ---
    def _call(self, tool: str, args: dict[str, Any]) -> None:
        result = self.tools.call(tool, args)
        part = ToolPart(
            tool_id=f"call_{len(self.done) + 1}",
            tool_name=tool,
            tool_input=args,
            tool_output=result.output,
            tool_status="completed" if result.ok else "error",
        )
        self.messages.append(Message(role="assistant", parts=[part]))
        self.done.append(tool)
        if result.ok and not is_read_only(tool) and tool != "send_confirmation":
            self.changed.append(tool)
        if result.ok and tool in ("get_customer", "get_reservation"):
            self.records[tool.removeprefix("get_")] = json.loads(result.output)

    def _ask_about(self, tool: str) -> bool:
        """Asks the (simulated) user to confirm; returns whether they did."""
        target = tool if tool in _ACTION_WORDS else MAIN_ACTION.get(self.request.intent or "", "")
        action = _ACTION_WORDS.get(target, "proceed")
        self._say(f"Before I go ahead: shall I {action}? Please confirm with yes or no.")
        simulated = self.case.input.get("simulated_user") or {}
        reply = str(simulated.get("reply") or "Yes.")
        self.messages.append(Message(role="user", parts=[TextPart(text=reply)]))
        self.confirmation = is_affirmative(reply)
        return self.confirmation

    def _say(self, text: str) -> None:
        self.messages.append(Message(role="assistant", parts=[TextPart(text=text)]))

    def _refusal(self, tool: str, rule: Rule) -> str:
        why = " and ".join(c.replace("_", " ") for c in rule.conditions) or "policy does not allow it"
        return f"I can't {_ACTION_WORDS.get(tool, tool)} here ({why})."

    def _closing_text(self) -> str:
        done = " and ".join(_ACTION_WORDS.get(t, t) for t in self.changed)
        lines = [f"Done: {done}."] if done else []
        lines += list(dict.fromkeys(self.notes))
        return " ".join(lines) or "I have looked into your request; nothing needed changing."


class SampleAgentExecutor:
    """RolloutExecutor for sample-environment cases, driven by the experiences in ``policy_set``."""

    label = AGENT_LABEL

    def __init__(
        self, *, top_k: int = 5, hotness: HotnessMix | None = None, slips: Slips | None = None
    ) -> None:
        self.top_k = top_k
        self.hotness = hotness  # where uses are recorded and how much they weigh (None: neither)
        self.slips = slips or Slips()  # [sample] slip: runs that forget every experience

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        return self.execute_sync(cases, policy_set, context)

    def execute_sync(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        library = ExperienceLibrary(policy_set, top_k=self.top_k, hotness=self.hotness)
        forgetful = ExperienceLibrary(ExperienceSet(root_uri=policy_set.root_uri), top_k=self.top_k)

        def read(case: Case) -> ExperienceLibrary:
            return forgetful if self.slips.slips(case.name, context) else library

        if self.hotness is None:
            return [self.run_case(case, read(case), context.policy_snapshot_id) for case in cases]
        used: list[Use] = []
        rollouts = [self.run_case(case, read(case), context.policy_snapshot_id, used) for case in cases]
        # One append for the batch: a use per experience per case, each by its rollout.
        self.hotness.ledger.try_record(used)
        return rollouts

    def run_case(
        self,
        case: Case,
        library: ExperienceLibrary,
        policy_snapshot_id: str = "",
        used: list[Use] | None = None,
    ) -> Rollout:
        """One case; with ``used``, the rollout gets an id and a use of each experience it
        retrieved, by that rollout, is added to ``used``."""
        request = read_request(str(case.input.get("user_query", "")))
        experiences = library.relevant(request)
        conversation = Conversation(case, library.guidance_for(experiences), request)
        conversation.run()
        metadata: dict[str, object] = {
            "agent": AGENT_LABEL,
            "tools_used": list(conversation.done),
            "iterations": sum(m.role == "assistant" for m in conversation.messages),
            "experiences_used": [e.name for e in experiences],
            "intent": request.intent,
        }
        if used is not None:
            rollout_id = metadata[ROLLOUT_ID] = new_rollout_id()
            used += [Use(e.uri, rollout_consumer(rollout_id), "agent", e.version) for e in experiences]
        return Rollout(
            case=case,
            messages=conversation.messages,
            policy_snapshot_id=policy_snapshot_id,
            evaluation=grade(case, conversation.messages, conversation.db),
            metadata=metadata,
        )
