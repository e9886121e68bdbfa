"""Components by name: a new agent is one registration plus one line of ovtui.toml; a name nothing
registers is refused when the workspace opens, naming ovtui.toml, the key and the registered names."""

from __future__ import annotations

from pathlib import Path

import pytest
from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.config import OvtuiConfig
from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout, RubricEvaluation
from ovtui.core.errors import ConfigError
from ovtui.core.interfaces import CaseLoader, RolloutExecutor
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_dataset
from ovtui.plugins import CaseSelection, Resources
from ovtui.plugins.environment import Environment, EnvironmentDefaults
from ovtui.testing.helpers import KEY_ENV
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.train.components.remote import RemoteCaseLoader, RemoteRolloutExecutor
from ovtui.wiring.registry import AGENTS, CASE_SOURCES, ENVIRONMENTS, Registry
from ovtui.wiring.workspace import TrainOptions, Workspace

pytest_plugins = ["ovtui.testing.fixtures"]

SEEN: list[ExecutionContext] = []


class RecordingExecutor:
    """The sample agent, noting the context of every batch it runs."""

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        SEEN.append(context)
        return await SampleAgentExecutor().execute(cases, policy_set, context)


@AGENTS.register("recording-sample")
def _recording(resources: Resources) -> RecordingExecutor:
    return RecordingExecutor()


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return build_sample_workspace(tmp_path / "ws")


def _set_agent(root: Path, name: str) -> None:
    config = root / "ovtui.toml"
    text = config.read_text(encoding="utf-8")
    assert 'agent = "sample"' in text
    config.write_text(text.replace('agent = "sample"', f'agent = "{name}"'), encoding="utf-8")


async def test_a_registered_executor_is_used_when_the_config_names_it(sample: Path) -> None:
    _set_agent(sample, "recording-sample")
    SEEN.clear()
    report = await Workspace(sample).runs.train(
        TrainOptions(epochs=1, approve="all", limit=4, eval_split=None)
    )
    # The sample's validation split also runs through it, in the gate's overlays of each plan.
    gate = [c for c in SEEN if c.policy_snapshot_id.startswith("validation-")]
    assert gate and {c.stage for c in gate} == {"rollouts"}
    contexts = [c for c in SEEN if c not in gate]
    assert contexts, "the registered executor was never called"
    assert {c.run_id for c in contexts} == {report.run_id}
    assert {(c.stage, c.epoch) for c in contexts} == {("train_rollouts", 0)}
    assert all(c.policy_snapshot_id.startswith("policy-snapshot:") and not c.cancelled for c in contexts)


def test_an_unregistered_name_is_a_config_error_listing_the_registered_ones(sample: Path) -> None:
    _set_agent(sample, "nobody")
    with pytest.raises(ConfigError) as caught:
        Workspace(sample)
    message = str(caught.value)
    assert message.startswith(f"{sample / 'ovtui.toml'}: invalid configuration")
    assert "[trainer.agent] unknown agent 'nobody'" in message
    assert all(name in message for name in ("llm", "recording-sample", "sample", "tau2-replay"))


def test_a_name_registers_once_and_lookups_name_the_config_key() -> None:
    registry: Registry[int] = Registry("widget", "[ui] widget")
    registry.register("one")(1)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("one")(2)
    assert registry.get("one") == 1 and list(registry) == ["one"]
    with pytest.raises(ConfigError, match=r"\[ui\] widget: unknown widget 'two' \(registered: one\)"):
        registry.get("two")


class AlwaysPasses(EnvironmentDefaults):
    """An environment whose evaluator passes every rollout: who grades shows in the report."""

    name = "always-passes"
    description = "grades everything passed"

    def splits(self) -> list[str]:
        return []

    def cases(self, split: str) -> list[Case]:
        return []

    async def execute(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        raise AssertionError("the llm agent runs the cases, not this environment")

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        return RubricEvaluation(passed=True, score=1.0, metadata={"evaluator": self.name})


@ENVIRONMENTS.register("always-passes")
def _always_passes(config: OvtuiConfig | None) -> Environment:
    return AlwaysPasses()


async def test_the_llm_agent_is_graded_by_the_environment_of_the_datasets(
    sample: Path, fake: FakeOpenAIServer
) -> None:
    fake.respond_with(lambda request: Reply.text("I cannot help with that."))
    _set_agent(sample, "llm")
    config = sample / "ovtui.toml"
    llm = f'[llm]\nbase_url = "{fake.base_url}"\napi_key_env = "{KEY_ENV}"\nmax_retries = 0\n'
    config.write_text(config.read_text(encoding="utf-8").replace("[llm]\n", llm), encoding="utf-8")

    by_the_sample = (await Workspace(sample).runs.evaluate(trials=1)).stages[0]
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("[trainer]\n", '[trainer]\nenvironment = "always-passes"\n'))
    by_the_other = (await Workspace(sample).runs.evaluate(trials=1)).stages[0]

    assert by_the_sample.cases == by_the_other.cases > 0
    # An answer without a tool call fails most of the sample's rubrics, none of the other's.
    assert by_the_sample.passed < by_the_sample.cases
    assert by_the_other.passed == by_the_other.cases
    assert len(fake.chat_requests) == 2 * by_the_sample.cases


class GeneratedCases:
    """A case source that makes its cases (the sample's generator) and leaves them to the agent."""

    def __init__(self) -> None:
        self.asked: list[CaseSelection] = []

    def cases(self, resources: Resources, selection: CaseSelection) -> CaseLoader:
        self.asked.append(selection)
        train, test = generate_dataset(7, 5, 3)
        return ListCaseLoader(train if selection.split == "train" else test, selection.batch_size)

    def executor(self, resources: Resources, dataset: str) -> RolloutExecutor | None:
        return None


GENERATED = GeneratedCases()
CASE_SOURCES.register("generated")(GENERATED)


async def test_a_dataset_declared_with_a_registered_source_takes_its_cases_from_it(sample: Path) -> None:
    config = sample / "ovtui.toml"
    config.write_text(
        config.read_text(encoding="utf-8") + '\n[datasets.made]\nsource = "generated"\n', encoding="utf-8"
    )
    GENERATED.asked.clear()
    report = await Workspace(sample).runs.train(TrainOptions(dataset="made", epochs=1, approve="all"))
    assert report.errors == [] and report.dataset == "made"
    assert {(s.dataset, s.split) for s in GENERATED.asked} == {("made", "train"), ("made", "validation")}
    epoch, final = report.stage("train_epoch"), report.stage("final_eval")
    assert epoch is not None and final is not None and (epoch.cases, final.cases) == (5, 3)


def test_the_remote_source_needs_a_url(sample: Path) -> None:
    config = sample / "ovtui.toml"
    config.write_text(config.read_text(encoding="utf-8") + '\n[datasets.served]\nsplit = "test"\n')
    with pytest.raises(ConfigError, match=r"\[datasets.served\] url: the remote case source needs"):
        kernel_of(Workspace(sample)).case_loader("served", "test", 8)


def test_a_remote_datasets_backoff_starts_at_its_retry_delay(sample: Path) -> None:
    config = sample / "ovtui.toml"
    served = '\n[datasets.served]\nurl = "http://127.0.0.1:9"\nretry_delay = 0.25\n'
    config.write_text(config.read_text(encoding="utf-8") + served, encoding="utf-8")
    kernel = kernel_of(Workspace(sample))
    loader, executor = kernel.case_loader("served", "test", 8), kernel.executor("served")
    assert isinstance(loader, RemoteCaseLoader) and isinstance(executor, RemoteRolloutExecutor)
    for retry in (loader.retry, *(service.retry for service in executor._services)):
        assert [retry.delay(n) for n in (1, 2, 3, 5)] == [0.25, 0.5, 1.0, 2.0]  # doubling, up to 2 s
