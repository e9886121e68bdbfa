"""The wire format of the benchmark protocol (cases by query, executions by id, polled): pydantic
models, so FastAPI validates requests (422 naming the field) and publishes them at
``/openapi.json``; the client uses the same."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ovtui.core.domain import Case, Experience, Rollout

MAX_PAGE = 1000
# An execution id goes into the poll route's path: one segment, no "/", no "..", not endless.
EXECUTION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._~:-]*$"
MAX_EXECUTION_ID_CHARS = 200


class Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")  # newer clients may send more than we know


class CaseQuery(Wire):
    dataset: str | None = None
    domain: str | None = None
    split: str = "train"
    cursor: str | None = Field(None, description="next_cursor of the previous page; null for the first")
    limit: int = Field(100, ge=1, le=MAX_PAGE)
    filters: dict[str, Any] = Field(
        default_factory=dict,
        description="key → value (or list of values) matched against the case's input, then metadata; "
        "'names' is a list of case names",
    )


class CasePage(Wire):
    cases: list[Case]
    next_cursor: str | None = None
    total: int | None = None


class PolicySetPayload(Wire):
    root_uri: str = ""
    policies: list[Experience] | None = Field(
        None,
        description="the experiences to run with; null = the set this service cached for the "
        "execution context's policy_snapshot_id (409 when it has none)",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExecutionContextPayload(Wire):
    policy_snapshot_id: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExecuteRequest(Wire):
    case: Case
    policy_set: PolicySetPayload = Field(default_factory=PolicySetPayload)
    execution_context: ExecutionContextPayload = Field(default_factory=ExecutionContextPayload)
    options: dict[str, Any] = Field(default_factory=dict)


ExecutionState = Literal["queued", "running", "completed", "failed"]


class Execution(Wire):
    execution_id: str = Field(pattern=EXECUTION_ID_PATTERN, max_length=MAX_EXECUTION_ID_CHARS)
    status: ExecutionState
    case_name: str = ""
    created_at: float
    updated_at: float
    error: str | None = None
    rollout: Rollout | None = None


def case_matches(case: Case, filters: dict[str, Any]) -> bool:
    for key, wanted in filters.items():
        if key == "names":
            if case.name not in (wanted if isinstance(wanted, list) else [wanted]):
                return False
            continue
        value = case.input.get(key, case.metadata.get(key))
        allowed = wanted if isinstance(wanted, list) else [wanted]
        if value not in allowed and str(value) not in [str(a) for a in allowed]:
            return False
    return True
