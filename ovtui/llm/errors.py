"""Why an LLM call gave no usable answer. Every message names the stage (and the item or field)."""

from __future__ import annotations

from ovtui.core.errors import LLMError


class LLMTransportError(LLMError):
    """The endpoint kept failing (429, 5xx, timeout, connection) after every retry."""

    def __init__(self, stage: str, attempts: int, reason: str) -> None:
        self.stage = stage
        self.attempts = attempts
        super().__init__(f"[{stage}] the model endpoint failed after {attempts} attempt(s): {reason}")


class LLMRequestError(LLMError):
    """The endpoint refused the request itself (400, 401, 403, 404, …): retrying cannot help."""

    def __init__(self, stage: str, status: int | None, reason: str) -> None:
        self.stage = stage
        self.status = status
        code = f" {status}" if status is not None else ""
        super().__init__(
            f"[{stage}] the model endpoint rejected the request ({code.strip() or 'error'}): {reason}"
        )


class LLMRefusalError(LLMError):
    """The model declined to answer."""

    def __init__(self, stage: str, refusal: str) -> None:
        self.stage = stage
        self.refusal = refusal
        super().__init__(f"[{stage}] the model refused: {refusal[:300]}")


class LLMTruncatedError(LLMError):
    """The answer was cut off (finish_reason=length): the output budget is too small for it."""

    def __init__(self, stage: str, completion_tokens: int) -> None:
        self.stage = stage
        self.completion_tokens = completion_tokens
        super().__init__(
            f"[{stage}] the answer was cut off after {completion_tokens} completion tokens "
            "(finish_reason=length); raise the server's output token limit or shorten the input"
        )


class LLMFormatError(LLMError):
    """The answer was not JSON matching the schema, even after one repair retry."""

    def __init__(self, stage: str, reason: str, raw: str) -> None:
        self.stage = stage
        self.reason = reason
        self.raw = raw
        hint = " (prose instead of JSON: a refusal?)" if "{" not in raw else ""
        super().__init__(
            f"[{stage}] unusable answer after one repair retry{hint}: {reason}; answer began {raw[:200]!r}"
        )


class ExtractError(LLMError):
    """The extract loop could not get acceptable operations: the message lists every problem."""

    def __init__(self, stage: str, problems: list[str]) -> None:
        self.stage = stage
        self.problems = problems
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"[{stage}] rejected the model's operations:\n{listed}")
