"""One API-key lookup for every reader: the key from the named variable, or one line naming the
setting and the variable."""

from __future__ import annotations

import pytest

from ovtui.core.api_keys import api_key_from_env
from ovtui.core.errors import ConfigError, OvtuiError

VARIABLE = "OVTUI_TEST_API_KEY"


class Refused(OvtuiError):
    pass


def test_the_key_is_read_and_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, "  sk-test-123\n")
    assert api_key_from_env(VARIABLE, "[llm] api_key_env") == "sk-test-123"


def test_no_variable_named_means_no_key() -> None:
    assert api_key_from_env(None, "[sessions] api_key_env") is None
    assert api_key_from_env("", "[sessions] api_key_env") is None


@pytest.mark.parametrize("value", [None, "", "   "])
def test_a_named_variable_unset_names_the_setting_and_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, value)
    with pytest.raises(ConfigError) as caught:
        api_key_from_env(VARIABLE, "[datasets.remote] api_key_env")
    expected = f"[datasets.remote] api_key_env: the environment variable {VARIABLE} is not set"
    assert str(caught.value) == expected
    with pytest.raises(Refused, match=VARIABLE):
        api_key_from_env(VARIABLE, "--api-key-env", error=Refused)
    assert api_key_from_env(VARIABLE, "[llm] api_key_env", required=False) is None
