"""The plug-in surface: everything an environment or a backend — ovtui's own or another
package's — imports from ovtui, in one place.

A plug-in is a module an entry point names (``[project.entry-points."ovtui.environments"]``,
``"ovtui.backends"``, ``"ovtui.agents"``, ``"ovtui.case_sources"``, ``"ovtui.trainers"``, and
``"ovtui.config"`` for its own ``ovtui.toml`` table). Its factory is handed ``Resources`` (the
workspace's builder); it describes itself (a ``Backend`` says its label and whether it uses a
model; an ``Environment`` its name and description); its settings are a ``PluginConfig`` it
reads with ``config.table(Model)``. The import contract "plug-ins import only the plug-in
surface" (pyproject.toml) holds the built-in environments and backends to this module and
``ovtui.plugins.wording`` (the wording learners write and agents read).

Each name is imported on first use, so importing the surface costs nothing a plug-in does not
use (the model client, for one, loads only for a backend that asks for it).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ovtui.core.api_keys import api_key_from_env
    from ovtui.core.bounded_json import parse_json
    from ovtui.core.bounds import cut_text
    from ovtui.core.config import LLMConfig, OvtuiConfig, PluginConfig
    from ovtui.core.context import ExecutionContext
    from ovtui.core.decisions import RejectionSource
    from ovtui.core.domain import (
        Case,
        CriterionResult,
        Experience,
        ExperienceSet,
        Message,
        PatchSemanticGradient,
        Rollout,
        RolloutAnalysis,
        RolloutTrainingResult,
        Rubric,
        RubricCriterion,
        RubricEvaluation,
        TextPart,
        ToolPart,
        Trajectory,
        TrajectoryOutcome,
    )
    from ovtui.core.errors import ConfigError, MemoryFormatError, OvtuiError
    from ovtui.core.experience_files import file_from_experience
    from ovtui.core.fileformat import CASES, EXPERIENCES, TRAJECTORIES, MemoryFile, render_memory
    from ovtui.core.interfaces import (
        CaseLoader,
        ExperienceReader,
        PolicyTrainer,
        RolloutEvaluator,
        RolloutExecutor,
        StreamingTrainer,
        TrainingEngine,
    )
    from ovtui.core.names import slugify
    from ovtui.core.rollouts import failed_rollout, feedback_text, iso_time
    from ovtui.core.suggest import did_you_mean
    from ovtui.llm.budget import CONVERSATION, LISTING, InputPart
    from ovtui.llm.client import LLMClient
    from ovtui.llm.extract_check import PEER_FIELD, ExtractedOperation, ItemCheck
    from ovtui.llm.extract_loop import ExtractLoop
    from ovtui.llm.loop_tools import HIDDEN_FIELDS
    from ovtui.memory.cases import case_from_memory
    from ovtui.memory.diffs import field_unified_diff
    from ovtui.memory.experience_prompt import EXPERIENCES_HEADER, relevant_experiences
    from ovtui.memory.hotness import HotnessMix, blend
    from ovtui.memory.ledger_state import ROLLOUT_ID, Use, new_rollout_id, rollout_consumer
    from ovtui.memory.memory_diff import INVALID_RANGES, NO_WRITABLE_TARGET, SkippedOperation
    from ovtui.memory.retrieval.ranking import Mix, RankedIndex, position_key
    from ovtui.memory.search import LexicalIndex, cached_tokens, stem
    from ovtui.memory.search import tokenize as lexical_tokens
    from ovtui.memory.store import MemoryStore
    from ovtui.memory.types import MemoryTypeRegistry, MemoryTypeSchema
    from ovtui.plugins.adherence import Directive, ReadsDirectives
    from ovtui.plugins.backends import (
        REPORTED_CONTRADICTIONS,
        Backends,
        ExperienceProposal,
        GradientProposer,
        MergeDecision,
        PlanMerger,
        ReportedContradiction,
        TrajectoryDraft,
        TrajectoryExtractor,
    )
    from ovtui.plugins.cases import DatasetError, read_cases
    from ovtui.plugins.environment import (
        CaseByCaseAgent,
        DescribesSetup,
        Environment,
        EnvironmentDefaults,
        EnvironmentError_,
        HoldsConnections,
        check_split,
    )
    from ovtui.plugins.resources import Backend, CaseSelection, CaseSource, Resources
    from ovtui.plugins.scoring import RecordError, record_of
    from ovtui.plugins.session_extraction import (
        ANSWERS_AFTER_TOOLS,
        CONVERSATION_CRITERIA,
        TOOL_CALLS_COMPLETE,
        ExtractedMemory,
        Extraction,
        SessionExtractor,
        case_metadata,
        session_case_name,
        tool_parts,
    )
    from ovtui.protocols.sessions import MemoryPolicy, SessionMessage
    from ovtui.storage.fsio import atomic_write_text, contained
    from ovtui.storage.paths import WorkspacePaths

# Where each public name lives, by group: what a plug-in is and is handed; the domain it takes
# and gives; the toolkits of environments (cases, experiences in prompts, retrieval and use) and
# of model backends (the client and its extraction loop, the memory types and files).
_HOMES: dict[str, tuple[str, ...]] = {
    # What a plug-in is, what it is handed, how it says what it is.
    "ovtui.plugins.environment": (
        "CaseByCaseAgent",
        "DescribesSetup",
        "Environment",
        "EnvironmentDefaults",
        "EnvironmentError_",
        "HoldsConnections",
        "check_split",
    ),
    "ovtui.plugins.adherence": ("Directive", "ReadsDirectives"),
    "ovtui.plugins.backends": (
        "Backends",
        "ExperienceProposal",
        "GradientProposer",
        "MergeDecision",
        "PlanMerger",
        "REPORTED_CONTRADICTIONS",
        "ReportedContradiction",
        "TrajectoryDraft",
        "TrajectoryExtractor",
    ),
    "ovtui.plugins.session_extraction": (
        "ANSWERS_AFTER_TOOLS",
        "CONVERSATION_CRITERIA",
        "TOOL_CALLS_COMPLETE",
        "ExtractedMemory",
        "Extraction",
        "SessionExtractor",
        "case_metadata",
        "session_case_name",
        "tool_parts",
    ),
    "ovtui.plugins.resources": ("Backend", "CaseSelection", "CaseSource", "Resources"),
    "ovtui.plugins.scoring": ("RecordError", "record_of"),
    "ovtui.plugins.cases": ("DatasetError", "read_cases"),
    "ovtui.core.config": ("LLMConfig", "OvtuiConfig", "PluginConfig"),
    "ovtui.core.context": ("ExecutionContext",),
    "ovtui.core.errors": ("ConfigError", "MemoryFormatError", "OvtuiError"),
    "ovtui.core.interfaces": (
        "CaseLoader",
        "ExperienceReader",
        "PolicyTrainer",
        "RolloutEvaluator",
        "RolloutExecutor",
        "StreamingTrainer",
        "TrainingEngine",
    ),
    # The domain.
    "ovtui.core.domain": (
        "Case",
        "CriterionResult",
        "Experience",
        "ExperienceSet",
        "Message",
        "PatchSemanticGradient",
        "Rollout",
        "RolloutAnalysis",
        "RolloutTrainingResult",
        "Rubric",
        "RubricCriterion",
        "RubricEvaluation",
        "TextPart",
        "ToolPart",
        "Trajectory",
        "TrajectoryOutcome",
    ),
    "ovtui.core.fileformat": ("CASES", "EXPERIENCES", "TRAJECTORIES", "MemoryFile", "render_memory"),
    "ovtui.core.rollouts": ("failed_rollout", "feedback_text", "iso_time"),
    "ovtui.protocols.sessions": ("MemoryPolicy", "SessionMessage"),
    # Small helpers every kind of plug-in uses.
    "ovtui.core.api_keys": ("api_key_from_env",),
    "ovtui.core.bounded_json": ("parse_json",),
    "ovtui.core.bounds": ("cut_text",),
    "ovtui.core.names": ("slugify",),
    "ovtui.core.suggest": ("did_you_mean",),
    "ovtui.storage.fsio": ("atomic_write_text", "contained"),
    "ovtui.storage.paths": ("WorkspacePaths",),
    # An agent's toolkit: experiences in a prompt, retrieval, and the record of what it used.
    "ovtui.memory.experience_prompt": ("EXPERIENCES_HEADER", "relevant_experiences"),
    "ovtui.memory.hotness": ("HotnessMix", "blend"),
    "ovtui.memory.ledger_state": ("ROLLOUT_ID", "Use", "new_rollout_id", "rollout_consumer"),
    "ovtui.memory.retrieval.ranking": ("Mix", "RankedIndex", "position_key"),
    "ovtui.memory.search": ("LexicalIndex", "cached_tokens", "stem"),
    # A model backend's toolkit: the client, its extraction loop, the memory files and types.
    "ovtui.llm.client": ("LLMClient",),
    "ovtui.llm.budget": ("CONVERSATION", "LISTING", "InputPart"),
    "ovtui.llm.extract_check": ("PEER_FIELD", "ExtractedOperation", "ItemCheck"),
    "ovtui.llm.extract_loop": ("ExtractLoop",),
    "ovtui.llm.loop_tools": ("HIDDEN_FIELDS",),
    "ovtui.memory.cases": ("case_from_memory",),
    "ovtui.memory.diffs": ("field_unified_diff",),
    "ovtui.memory.memory_diff": ("INVALID_RANGES", "NO_WRITABLE_TARGET", "SkippedOperation"),
    "ovtui.memory.store": ("MemoryStore",),
    "ovtui.memory.types": ("MemoryTypeRegistry", "MemoryTypeSchema"),
    "ovtui.core.experience_files": ("file_from_experience",),
    "ovtui.core.decisions": ("RejectionSource",),
}
_RENAMED = {"lexical_tokens": ("ovtui.memory.search", "tokenize")}
_WHERE = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "ANSWERS_AFTER_TOOLS",
    "CASES",
    "CONVERSATION",
    "CONVERSATION_CRITERIA",
    "EXPERIENCES",
    "EXPERIENCES_HEADER",
    "HIDDEN_FIELDS",
    "INVALID_RANGES",
    "LISTING",
    "NO_WRITABLE_TARGET",
    "PEER_FIELD",
    "REPORTED_CONTRADICTIONS",
    "ROLLOUT_ID",
    "TOOL_CALLS_COMPLETE",
    "TRAJECTORIES",
    "Backend",
    "Backends",
    "Case",
    "CaseByCaseAgent",
    "CaseLoader",
    "CaseSelection",
    "CaseSource",
    "ConfigError",
    "CriterionResult",
    "DatasetError",
    "DescribesSetup",
    "Directive",
    "Environment",
    "EnvironmentDefaults",
    "EnvironmentError_",
    "ExecutionContext",
    "Experience",
    "ExperienceProposal",
    "ExperienceReader",
    "ExperienceSet",
    "ExtractLoop",
    "ExtractedMemory",
    "ExtractedOperation",
    "Extraction",
    "GradientProposer",
    "HoldsConnections",
    "HotnessMix",
    "InputPart",
    "ItemCheck",
    "LLMClient",
    "LLMConfig",
    "LexicalIndex",
    "MemoryFile",
    "MemoryFormatError",
    "MemoryPolicy",
    "MemoryStore",
    "MemoryTypeRegistry",
    "MemoryTypeSchema",
    "MergeDecision",
    "Message",
    "Mix",
    "OvtuiConfig",
    "OvtuiError",
    "PatchSemanticGradient",
    "PlanMerger",
    "PluginConfig",
    "PolicyTrainer",
    "RankedIndex",
    "ReadsDirectives",
    "RecordError",
    "RejectionSource",
    "ReportedContradiction",
    "Resources",
    "Rollout",
    "RolloutAnalysis",
    "RolloutEvaluator",
    "RolloutExecutor",
    "RolloutTrainingResult",
    "Rubric",
    "RubricCriterion",
    "RubricEvaluation",
    "SessionExtractor",
    "SessionMessage",
    "SkippedOperation",
    "StreamingTrainer",
    "TextPart",
    "ToolPart",
    "TrainingEngine",
    "Trajectory",
    "TrajectoryDraft",
    "TrajectoryExtractor",
    "TrajectoryOutcome",
    "Use",
    "WorkspacePaths",
    "api_key_from_env",
    "atomic_write_text",
    "blend",
    "cached_tokens",
    "case_from_memory",
    "case_metadata",
    "check_split",
    "contained",
    "cut_text",
    "did_you_mean",
    "failed_rollout",
    "feedback_text",
    "field_unified_diff",
    "file_from_experience",
    "iso_time",
    "lexical_tokens",
    "new_rollout_id",
    "parse_json",
    "position_key",
    "read_cases",
    "record_of",
    "relevant_experiences",
    "render_memory",
    "rollout_consumer",
    "session_case_name",
    "slugify",
    "stem",
    "tool_parts",
]


def __getattr__(name: str) -> object:
    """A public name, imported on first use (then kept here like any module attribute)."""
    if name in _RENAMED:
        module, attribute = _RENAMED[name]
    elif name in _WHERE:
        module, attribute = _WHERE[name], name
    else:
        raise AttributeError(f"module 'ovtui.plugins' has no attribute {name!r}")
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
