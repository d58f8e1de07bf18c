"""Tool configuration: ``mldebug.toml`` or ``[tool.mldebug]`` in ``pyproject.toml``, validated strictly.

Layers, lowest first: built-in defaults < the file < ``MLDEBUG_*`` environment variables < flags. A
key set in a higher layer replaces the lower one (lists are not merged). The file is the first of
``mldebug.toml`` / ``pyproject.toml`` with a ``[tool.mldebug]`` table found from the working
directory upward, or the file ``MLDEBUG_CONFIG`` names::

    [tool.mldebug]
    select = ["DS", "LR0"]            # codes, prefixes or names; default: every check
    ignore = ["no-generation-markers"]
    fail-on = "warning"               # error | warning | info

    [tool.mldebug.checks.response-truncated]   # a check by code or name
    severity = "error"

    [tool.mldebug.versions]           # the framework versions the run targets (default: the installed ones)
    transformers = "4.57.1"
    [tool.mldebug.checks.loss-spike]           # a run check's documented thresholds (mldebug explain RN003)
    sigma = 8
    [tool.mldebug.checks.loss-saturated]       # a probe check's thresholds (mldebug explain GP001)
    push_below = 0.01
"""

from __future__ import annotations

import difflib
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core import registry
from mldebug_cli.core.errors import MldebugError, UsageError
from mldebug_cli.core.findings import Report, Severity
from mldebug_cli.core.safe_io import long_number_message, open_regular

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CONFIG_FILE = "mldebug.toml"
PYPROJECT = "pyproject.toml"
ENV_CONFIG = "MLDEBUG_CONFIG"
ENV_SELECT = "MLDEBUG_SELECT"
ENV_IGNORE = "MLDEBUG_IGNORE"
ENV_FAIL_ON = "MLDEBUG_FAIL_ON"
TOP_KEYS = ("select", "ignore", "fail-on", "checks", "versions")
CHECK_KEYS = ("severity",)
THRESHOLD_FAMILIES = ("RN", "GP")  # families whose checks document thresholds (loading them imports no torch)
SEVERITIES = tuple(s.value for s in Severity)


class ConfigError(MldebugError):
    """The configuration file or an ``MLDEBUG_*`` variable cannot be read or is not valid."""


@dataclass(frozen=True)
class Settings:
    """What the configuration decides: which checks run, what fails the run, per-check severities."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: Severity | None = None  # None: not set (each command has its own default)
    severities: Mapping[str, Severity] = field(default_factory=dict)  # check code -> severity
    versions: Mapping[str, str] = field(default_factory=dict)  # package -> target version
    thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # check code -> {name: value}

    def apply(self, report: Report) -> Report:
        """The report with the configured per-check severities."""
        if not self.severities:
            return report
        return replace(report.with_findings(tuple(
            replace(f, severity=self.severities.get(f.code, f.severity)) for f in report.findings
        )), not_kept=tuple(replace(n, severity=self.severities.get(n.code, n.severity)) for n in report.not_kept))


def load(cwd: Path | None = None, env: Mapping[str, str] | None = None, *,
         version_packages: tuple[str, ...]) -> Settings:
    """Defaults, then the configuration file, then the environment. ``version_packages``: the packages ``[versions]``
    may name (the command line passes the framework registry's, so this floor imports no framework)."""
    env = os.environ if env is None else env
    path = _explicit_file(env) if env.get(ENV_CONFIG) else find_file(cwd or Path.cwd())
    settings = read_file(path, version_packages=version_packages) if path is not None else Settings()
    return _with_env(settings, env)


def find_file(start: Path) -> Path | None:
    """The nearest ``mldebug.toml``, or ``pyproject.toml`` with ``[tool.mldebug]``, from ``start`` upward."""
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / CONFIG_FILE).is_file():
            return folder / CONFIG_FILE
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and "mldebug" in _parse(pyproject).get("tool", {}):
            return pyproject
    return None


def read_file(path: Path, *, version_packages: tuple[str, ...]) -> Settings:
    document = _parse(path)
    if path.name == PYPROJECT:
        table, where = document.get("tool", {}).get("mldebug", {}), "[tool.mldebug]"
    else:
        table, where = document, "the top level"
    return _settings(table, source=str(path), where=where, version_packages=version_packages)


def _explicit_file(env: Mapping[str, str]) -> Path:
    path = Path(env[ENV_CONFIG])
    if not path.is_file():
        raise ConfigError(f"{ENV_CONFIG}={path}: no such file", hint="point it at a mldebug.toml or pyproject.toml")
    return path


def _parse(path: Path) -> dict[str, Any]:
    try:
        with open_regular(path) as stream:
            raw = stream.read()
        return tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc}") from None
    except ValueError as exc:  # an integer over Python's digit limit
        raise ConfigError(f"{path}: {long_number_message(raw.decode('utf-8', errors='replace'), exc)}") from None


def _settings(table: Mapping[str, Any], source: str, where: str, version_packages: tuple[str, ...]) -> Settings:
    _known_keys(table, TOP_KEYS, f"{source}: {where}")
    fail_on = table.get("fail-on")
    severities, thresholds = _check_options(table.get("checks", {}), source)
    return Settings(
        select=_selectors(table.get("select", []), f"{source}: select"),
        ignore=_selectors(table.get("ignore", []), f"{source}: ignore"),
        fail_on=None if fail_on is None else _severity(fail_on, f"{source}: fail-on"),
        severities=severities,
        thresholds=thresholds,
        versions=_versions(table.get("versions", {}), f"{source}: versions", version_packages),
    )


def _known_keys(table: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            raise ConfigError(
                f"{where}: unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                hint=f"the keys are {', '.join(allowed)}",
            )


def _versions(table: Any, where: str, packages: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table of package = \"version\", got {table!r}")
    _known_keys(table, packages, where)
    for package, version in table.items():
        if not isinstance(version, str) or not version.strip():
            raise ConfigError(f"{where}.{package}: expected a version string such as \"4.57.1\", got {version!r}")
    return dict(table)


def _selectors(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of check codes, prefixes or names, got {value!r}")
    for selector in value:
        try:
            registry.selected([selector])
        except UsageError:
            raise ConfigError(f"{where}: {selector!r} matches no check code, prefix or name",
                              hint="`mldebug explain --all` lists every check") from None
    return tuple(value)


def _severity(value: Any, where: str) -> Severity:
    if value not in SEVERITIES:
        raise ConfigError(f"{where}: expected one of {', '.join(SEVERITIES)}, got {value!r}")
    return Severity(value)


def _check_options(table: Any, source: str) -> tuple[dict[str, Severity], dict[str, dict[str, float]]]:
    """Per-check severities, and thresholds for the checks that document some (``THRESHOLDS``)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: checks: expected a table keyed by check code or name, got {table!r}")
    severities: dict[str, Severity] = {}
    thresholds: dict[str, dict[str, float]] = {}
    seen: set[str] = set()
    for handle, options in table.items():
        where = f"{source}: checks.{handle}"
        try:
            ref = registry.lookup(handle)
        except UsageError:
            raise ConfigError(f"{where}: unknown check {handle!r}", hint="`mldebug explain --all` lists every check") from None
        if ref.code in seen:
            raise ConfigError(f"{where}: {ref.code} is configured twice (by code and by name)")
        seen.add(ref.code)
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: expected a table of options, got {options!r}")
        defaults = registry.load(ref).thresholds if ref.family in THRESHOLD_FAMILIES else {}
        _known_keys(options, CHECK_KEYS + tuple(defaults), where)
        if "severity" in options:
            severities[ref.code] = _severity(options["severity"], f"{where}.severity")
        for name in defaults:
            if name in options:
                thresholds.setdefault(ref.code, {})[name] = _threshold(options[name], defaults[name], f"{where}.{name}")
    return severities, thresholds


MAX_COUNT_THRESHOLD = 10**9  # a window or count of points beyond any run's length


def _threshold(value: Any, default: float, where: str) -> float:
    """A check's threshold: a finite number, not negative; a whole number where the default is a count."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {str(value)[:80]!r}")
    if isinstance(value, int) and abs(value) > MAX_COUNT_THRESHOLD:
        raise ConfigError(f"{where}: {str(value)[:20]}... is out of range (at most {MAX_COUNT_THRESHOLD:,})")
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: expected a finite number of 0 or more, got {value!r}")
    if isinstance(default, int) and (value != int(value) or value > MAX_COUNT_THRESHOLD):
        raise ConfigError(f"{where}: expected a whole number up to {MAX_COUNT_THRESHOLD:,} (a count), got {value!r}")
    return float(value)


def _with_env(settings: Settings, env: Mapping[str, str]) -> Settings:
    if env.get(ENV_SELECT) is not None:
        settings = replace(settings, select=_selectors(_split(env[ENV_SELECT]), ENV_SELECT))
    if env.get(ENV_IGNORE) is not None:
        settings = replace(settings, ignore=_selectors(_split(env[ENV_IGNORE]), ENV_IGNORE))
    if env.get(ENV_FAIL_ON):
        settings = replace(settings, fail_on=_severity(env[ENV_FAIL_ON], ENV_FAIL_ON))
    return settings


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]
