"""Reading config keys with a framework's defaults, remembering which key each setting came from."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.schedule.model import IgnoredKey
from mldebug_cli.sources.config_file import ConfigFile

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


class SpecReader:
    """Typed access to a config's keys for one framework mapping.

    ``keys`` records setting -> config key for every setting the config sets; ``ignored`` and
    ``notes`` collect what the mapping found along the way.
    """

    def __init__(self, config: ConfigFile) -> None:
        self.config = config
        self.keys: dict[str, str] = {}
        self.ignored: list[IgnoredKey] = []
        self.notes: list[str] = []

    def has(self, key: str) -> bool:
        return self.config.has(key) and self.config.get(key) is not None

    def number(self, setting: str | None, key: str, default: Any) -> Any:
        if not self.has(key):
            return default
        self._remember(setting, key)
        return self._as_number(key, self.config.get(key))

    def integer(self, setting: str | None, key: str, default: Any) -> Any:
        if not self.has(key):
            return default
        value = self.number(setting, key, default)
        if float(value) != int(value):
            raise self.error(key, f"must be a whole number, got {value!r}")
        return int(value)

    def flag(self, setting: str | None, key: str, default: Any) -> Any:
        if not self.has(key):
            return default
        self._remember(setting, key)
        value = self.config.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise self.error(key, f"must be true or false, got {value!r}")

    def text(self, setting: str | None, key: str, default: Any) -> Any:
        if not self.has(key):
            return default
        self._remember(setting, key)
        value = self.config.get(key)
        if isinstance(value, (Mapping, list)):
            raise self.error(key, f"must be a name, got {type(value).__name__}")
        return str(value)

    def mapping(self, setting: str | None, key: str) -> dict[str, Any]:
        """A dict-valued key; a JSON string (as on the command line) is accepted too."""
        if not self.has(key):
            return {}
        self._remember(setting, key)
        value = self.config.get(key)
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError:
                raise self.error(key, "must be a mapping or a JSON object string") from None
        if not isinstance(value, Mapping):
            raise self.error(key, f"must be a mapping, got {type(value).__name__}")
        return {str(k): self._coerce_scalar(v) for k, v in value.items()}

    def raw(self, setting: str | None, key: str) -> Any:
        if not self.has(key):
            return None
        self._remember(setting, key)
        return self.config.get(key)

    def ignore(self, key: str, reason: str, hint: str | None = None) -> None:
        self.ignored.append(IgnoredKey(key, reason, hint))

    def error(self, key: str, what: str) -> InputError:
        line = self.config.line(key)
        where = f"line {line}: " if line is not None else ""
        return InputError(f"{self.config.path}: {where}{key} {what}")

    def _remember(self, setting: str | None, key: str) -> None:
        if setting is not None:
            self.keys[setting] = key

    def _as_number(self, key: str, value: Any) -> float | int:
        if isinstance(value, bool):
            raise self.error(key, f"must be a number, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):  # .nan, .inf, 1e999: no count or rate is one
            raise self.error(key, f"must be a finite number, got {value!r}")
        if isinstance(value, (int, float)):
            return value
        if isinstance(value, str) and _NUMBER.match(value.strip()):  # YAML 1.1 reads 5e-5 as a string
            number = float(value)
            if not math.isfinite(number):
                raise self.error(key, f"must be a finite number, got {value!r}")
            return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
        raise self.error(key, f"must be a number, got {value!r}")

    @staticmethod
    def _coerce_scalar(value: Any) -> Any:
        if isinstance(value, str) and _NUMBER.match(value.strip()):
            return float(value)
        return value
