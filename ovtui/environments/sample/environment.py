"""The sample help-desk environment behind the Environment interface: cases from the seeded
generator, the scripted agent (which reads experiences by rules, so it says which lines it cannot
use), the deterministic rubric evaluator, and the checks a case must pass to be run and graded here.

Registered as ``sample`` by ovtui's entry point ``ovtui.environments: sample = …:environment``, like
any other package's environment."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ovtui.environments.sample import adherence
from ovtui.environments.sample.agent import ExperienceLibrary, SampleAgentExecutor
from ovtui.environments.sample.criteria import CRITERION_KINDS
from ovtui.environments.sample.evaluator import SampleEvaluator
from ovtui.environments.sample.generate import (
    DEFAULT_SEED,
    DEFAULT_TEST_COUNT,
    DEFAULT_TRAIN_COUNT,
    DEFAULT_VALIDATION_COUNT,
    generate_splits,
)
from ovtui.environments.sample.guidance import unread_lines
from ovtui.environments.sample.slip import SampleConfig, Slips
from ovtui.environments.sample.tools import TOOL_SPECS, load_policy
from ovtui.environments.sample.validate import case_problems
from ovtui.plugins import (
    Case,
    Directive,
    ExecutionContext,
    ExperienceReader,
    ExperienceSet,
    Message,
    Rollout,
    RolloutExecutor,
    RubricEvaluation,
    check_split,
)

if TYPE_CHECKING:
    from ovtui.plugins import HotnessMix, OvtuiConfig

LIBRARY_CACHE = 8  # snapshots whose parsed experiences stay indexed (one per epoch is typical)


@dataclass(frozen=True)
class SampleAgentReader:
    """The scripted agent's reading of experiences: the Approach and Reflect lines its vocabulary
    (``guidance``) turns into no rule or sequence are lines it cannot act on."""

    name: str = "the sample agent"

    def unread_lines(self, content: str) -> list[tuple[int, str]]:
        return unread_lines(content)


READER: ExperienceReader = SampleAgentReader()


class SampleEnvironment:
    name = "sample"
    description = "the sample airline help desk (seeded cases, scripted agent, rubric evaluator)"
    reader: ExperienceReader | None = READER

    def __init__(
        self,
        seed: int = DEFAULT_SEED,
        train: int = DEFAULT_TRAIN_COUNT,
        test: int = DEFAULT_TEST_COUNT,
        validation: int = DEFAULT_VALIDATION_COUNT,
        *,
        slips: Slips | None = None,
    ) -> None:
        self._counts = (seed, train, test, validation)
        self._slips = slips or Slips()
        self._agent = SampleAgentExecutor(slips=self._slips)
        self._evaluator = SampleEvaluator()
        self._libraries: OrderedDict[str, ExperienceLibrary] = OrderedDict()

    @cached_property
    def _cases(self) -> dict[str, list[Case]]:
        """Generated when first asked for: a workspace that only grades or validates never pays."""
        return {str(split): cases for split, cases in generate_splits(*self._counts).items()}

    def splits(self) -> list[str]:
        return ["train", "validation", "test"]

    def cases(self, split: str) -> list[Case]:
        check_split(self, split)
        return list(self._cases[split])

    def _library(self, policy_set: ExperienceSet, snapshot_id: str) -> ExperienceLibrary:
        """The index of a snapshot's experiences, built once per snapshot (ids are content hashes)."""
        if not snapshot_id:
            return ExperienceLibrary(policy_set, top_k=self._agent.top_k)
        library = self._libraries.get(snapshot_id)
        if library is None:
            library = ExperienceLibrary(policy_set, top_k=self._agent.top_k)
            self._libraries[snapshot_id] = library
            while len(self._libraries) > LIBRARY_CACHE:
                self._libraries.popitem(last=False)
        else:
            self._libraries.move_to_end(snapshot_id)
        return library

    async def execute(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        if self._slips.slips(case.name, context):
            library = ExperienceLibrary(ExperienceSet(root_uri=policy_set.root_uri), top_k=self._agent.top_k)
        else:
            library = self._library(policy_set, context.policy_snapshot_id)
        return self._agent.run_case(case, library, context.policy_snapshot_id)

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        return self._evaluator.evaluate_sync(rollout)

    def agent(self, hotness: HotnessMix | None) -> RolloutExecutor:
        return SampleAgentExecutor(hotness=hotness, slips=self._slips)

    def case_problems(self, case: Case) -> list[str]:
        return case_problems(case)

    def policy_text(self) -> str | None:
        return load_policy()

    def tool_schemas(self) -> list[dict[str, Any]] | None:
        return [asdict(spec) for spec in TOOL_SPECS.values()]

    def directives(self, content: str) -> list[Directive]:
        """The rules and sequences the agent reads in each line (``ReadsDirectives``)."""
        return adherence.directives(content)

    def situation(self, messages: list[Message]) -> dict[str, str]:
        return adherence.situation(messages)

    def can_grade(self, case: Case) -> bool:
        """When every rubric criterion is of a kind the evaluator checks."""
        criteria = case.rubric.criteria
        return bool(criteria) and all(c.metadata.get("kind") in CRITERION_KINDS for c in criteria)


def environment(config: OvtuiConfig | None = None) -> SampleEnvironment:
    """The entry point's factory: ``[sample]`` (``SampleConfig``) says how often the agent slips."""
    settings = config.table(SampleConfig) if config is not None else SampleConfig()
    return SampleEnvironment(slips=Slips(settings.slip, settings.seed))
