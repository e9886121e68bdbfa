"""``ovtui.toml`` on disk: read with tomllib (bounded), validated by the schema of
``ovtui.core.config``, written with tomli-w.

An API key never lives here: ``[llm] api_key_env`` names the environment variable that holds it.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import BaseModel, ValidationError

from ovtui.core import plugins
from ovtui.core.bounds import MAX_CONFIG_BYTES
from ovtui.core.config import OvtuiConfig, PluginConfig
from ovtui.core.errors import ConfigError, OvtuiError
from ovtui.core.suggest import did_you_mean
from ovtui.storage.fsio import atomic_write_text
from ovtui.storage.paths import CONFIG_FILE
from ovtui.storage.reading import read_bounded

PLUGIN_TABLES = "ovtui.config"  # the entry point group of plug-ins' own tables: name -> PluginConfig


class InvalidConfig(ConfigError):
    """ovtui.toml's schema problems, with ``partial``: the configuration without the keys they
    name (None when that does not read either), so the component names it gives can be checked
    and said in the same report, not one fix later."""

    def __init__(self, message: str, partial: OvtuiConfig | None) -> None:
        super().__init__(message)
        self.partial = partial


def _without(raw: dict[str, Any], exc: ValidationError) -> OvtuiConfig | None:
    """``raw`` validated again with each key an error names left out (its default then holds)."""
    kept = copy.deepcopy(raw)
    for err in exc.errors():
        *path, last = err["loc"]
        table: Any = kept
        for part in path:
            table = table.get(part) if isinstance(table, dict) else None
        if isinstance(table, dict):
            table.pop(last, None)
    try:
        return OvtuiConfig.model_validate(kept)
    except ValidationError:
        return None


def _problems(exc: ValidationError, model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[str]:
    """``[dotted.key] message`` for each error, a misspelt key followed by the key it likely meant."""
    lines = []
    for err in exc.errors():
        loc = [*prefix, *(str(p) for p in err["loc"])]
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message += did_you_mean(loc[-1], _keys_at(model, [str(p) for p in err["loc"][:-1]]))
        lines.append(f"  [{'.'.join(loc)}] {message}")
    return lines


def _keys_at(model: type[BaseModel], path: list[str]) -> list[str]:
    """The keys a (nested) section of ``model`` may hold, for the suggestion of a misspelt one."""
    for name in path:
        field = model.model_fields.get(name)
        nested = getattr(field.annotation, "model_fields", None) if field is not None else None
        if nested is None:
            return []
        model = field.annotation  # type: ignore[assignment,union-attr]
    return list(model.model_fields)


def _plugin_table(name: str, value: object, problems: list[str]) -> bool:
    """Whether ``[name]`` is a plug-in's table that ``value`` satisfies; each problem appended."""
    entries = plugins.declared(PLUGIN_TABLES).get(name)
    if not entries:
        known = [*OvtuiConfig.model_fields, *plugins.declared(PLUGIN_TABLES)]
        problems.append(f"  [{name}] unknown table{did_you_mean(name, known)}")
        return False
    model = plugins.load(entries[0])
    if not (isinstance(model, type) and issubclass(model, PluginConfig)):
        raise ConfigError(
            f"the entry point {name} = {entries[0].value!r} (group {PLUGIN_TABLES}) of "
            f"{plugins.distribution(entries[0])} names no PluginConfig: {model!r}"
        )
    try:
        model.model_validate(value)
    except ValidationError as exc:
        problems += _problems(exc, model, (name,))
        return False
    return True


def load_config(root: Path) -> OvtuiConfig:
    path = root / CONFIG_FILE
    if not path.exists():
        return OvtuiConfig()
    return load_config_file(path)


def load_config_file(path: Path) -> OvtuiConfig:
    """The configuration of ``path``: ovtui's own sections and every plug-in's table, each
    checked, every problem said at once."""
    try:
        data = read_bounded(path, MAX_CONFIG_BYTES, what="the configuration")
        raw = tomllib.loads(data.decode("utf-8"))
    except OvtuiError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    own = {key: value for key, value in raw.items() if key in OvtuiConfig.model_fields}
    problems: list[str] = []
    tables = {
        name: value
        for name, value in raw.items()
        if name not in own and _plugin_table(name, value, problems) and isinstance(value, dict)
    }
    config: OvtuiConfig | None = None
    partial: OvtuiConfig | None = None
    try:
        config = partial = OvtuiConfig.model_validate(own)
    except ValidationError as exc:
        problems = _problems(exc, OvtuiConfig) + problems
        partial = _without(own, exc)
    if problems or config is None:
        raise InvalidConfig("\n".join([f"{path}: invalid configuration", *problems]), partial)
    return config.with_tables(tables)


def save_config(root: Path, config: OvtuiConfig) -> None:
    # TOML has no null: an unset optional key (e.g. [embedding] dimensions) is left out.
    data = config.model_dump(mode="json", exclude_defaults=False, exclude_none=True)
    data.update(config.plugin_tables())  # a plug-in's table is written back as it was read
    # By its name under the root: a relative root joined to itself would nest (W/W/ovtui.toml).
    atomic_write_text(CONFIG_FILE, tomli_w.dumps(data), root=root)
