"""``ovtui.toml`` on disk: read with tomllib (bounded), validated by the schema of
``ovtui.core.config``, written with tomli-w.

An API key never lives here: ``[llm] api_key_env`` names the environment variable that holds it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w
from pydantic import ValidationError

from ovtui.core.bounds import MAX_CONFIG_BYTES
from ovtui.core.config import OvtuiConfig
from ovtui.core.errors import ConfigError, OvtuiError
from ovtui.storage.fsio import atomic_write_text
from ovtui.storage.paths import CONFIG_FILE
from ovtui.storage.reading import read_bounded


def _describe(exc: ValidationError, source: Path) -> str:
    lines = [f"{source}: invalid configuration"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        lines.append(f"  [{where}] {err['msg']}")
    return "\n".join(lines)


def load_config(root: Path) -> OvtuiConfig:
    path = root / CONFIG_FILE
    if not path.exists():
        return OvtuiConfig()
    return load_config_file(path)


def load_config_file(path: Path) -> OvtuiConfig:
    try:
        data = read_bounded(path, MAX_CONFIG_BYTES, what="the configuration")
        raw = tomllib.loads(data.decode("utf-8"))
    except OvtuiError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return OvtuiConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from exc


def save_config(root: Path, config: OvtuiConfig) -> None:
    # TOML has no null: an unset optional key (e.g. [user_simulator], [tau2] replay) is left out.
    data = config.model_dump(mode="json", exclude_defaults=False, exclude_none=True)
    # By its name under the root: a relative root joined to itself would nest (W/W/ovtui.toml).
    atomic_write_text(CONFIG_FILE, tomli_w.dumps(data), root=root)
