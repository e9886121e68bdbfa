"""The sample help-desk environment behind the Environment interface (cases from the seeded generator,
the scripted agent, the deterministic rubric evaluator)."""

from __future__ import annotations

from collections import OrderedDict

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout, RubricEvaluation
from ovtui.environments.base import check_split
from ovtui.environments.sample.agent import ExperienceLibrary, SampleAgentExecutor
from ovtui.environments.sample.evaluator import SampleEvaluator
from ovtui.environments.sample.generate import (
    DEFAULT_SEED,
    DEFAULT_TEST_COUNT,
    DEFAULT_TRAIN_COUNT,
    generate_dataset,
)

LIBRARY_CACHE = 8  # snapshots whose parsed experiences stay indexed (one per epoch is typical)


class SampleEnvironment:
    name = "sample"
    description = "the sample airline help desk (seeded cases, scripted agent, rubric evaluator)"

    def __init__(
        self, seed: int = DEFAULT_SEED, train: int = DEFAULT_TRAIN_COUNT, test: int = DEFAULT_TEST_COUNT
    ) -> None:
        train_cases, test_cases = generate_dataset(seed, train, test)
        self._cases = {"train": train_cases, "test": test_cases}
        self._agent = SampleAgentExecutor()
        self._evaluator = SampleEvaluator()
        self._libraries: OrderedDict[str, ExperienceLibrary] = OrderedDict()

    def splits(self) -> list[str]:
        return list(self._cases)

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
        library = self._library(policy_set, context.policy_snapshot_id)
        return self._agent.run_case(case, library, context.policy_snapshot_id)

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        return self._evaluator.evaluate_sync(rollout)
