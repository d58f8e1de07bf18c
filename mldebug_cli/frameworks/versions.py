"""Which framework versions a run targets, where that came from, and what changes between versions.

A target version comes from (highest first): a ``--transformers-version``-style flag, ``[versions]`` in
``mldebug.toml``, a requirements file or lockfile beside the training config (``requirements.txt``,
``uv.lock``, ``poetry.lock``, ``pylock.toml``), else the installed package. Package metadata is read
without importing the package.

transformers not given: where the framework's own pin on transformers (its wheel's ``Requires-Dist``, recorded in
the version facts' ``pins``) excludes the installed release, the run cannot use it (LLaMA-Factory refuses to start
outside its range), so mldebug assumes the newest recorded transformers release the pin allows, and the header
says so.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from mldebug_cli.core.safe_io import read_text
from mldebug_cli.frameworks import record
from mldebug_cli.frameworks.lines import DISTRIBUTIONS, VERSION_LABELS, VERSION_PACKAGES

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

# the newest transformers whose step counting and schedulers the built-in engine was checked against
NEWEST_CHECKED_TRANSFORMERS = "5.23.0"
PACKAGES = VERSION_PACKAGES  # the ones a target version can be given for
_DISTRIBUTIONS = {**DISTRIBUTIONS, **{package: package for package in DISTRIBUTIONS.values()}}
REQUIREMENTS_FILES = ("requirements.txt",)
LOCK_FILES = ("uv.lock", "poetry.lock", "pylock.toml")
INSTALLED = "installed"
ASSUMED = "assumed"  # a source that begins so: chosen by mldebug (a framework's pin), not given by the user


def installed(framework: str) -> str | None:
    try:
        return metadata.version(_DISTRIBUTIONS.get(framework, framework))
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class TargetVersion:
    package: str
    version: str | None  # None: not given and not installed
    source: str  # "--trl-version", "mldebug.toml", "requirements.txt beside the config", "installed", ...

    @property
    def given(self) -> bool:
        """The user said which version runs (a flag, mldebug.toml, a requirements file or lockfile)."""
        return self.source not in (INSTALLED, "not installed") and not self.source.startswith(ASSUMED)

    def describe(self) -> str:
        return f"{self.package} {self.version} ({self.source})" if self.version else f"{self.package} not installed"


@dataclass(frozen=True)
class TargetVersions:
    entries: Mapping[str, TargetVersion] = field(default_factory=dict)

    def get(self, package: str) -> TargetVersion:
        package = _DISTRIBUTIONS.get(package, package)
        found = self.entries.get(package)
        if found is not None:
            return found
        version = installed(package)
        return TargetVersion(package, version, INSTALLED if version else "not installed")

    def version(self, package: str) -> str | None:
        return self.get(package).version

    def describe(self, packages: tuple[str, ...]) -> str:
        return ", ".join(self.get(p).describe() for p in packages)


def resolve(config_path: str | None = None, flags: Mapping[str, str | None] | None = None,
            configured: Mapping[str, str] | None = None, framework: str | None = None) -> TargetVersions:
    """Target versions for PACKAGES: flags, then mldebug.toml's ``[versions]``, then files beside the config, then
    (transformers, when ``framework`` is named) the newest release ``framework``'s pin allows where it excludes the
    installed one."""
    beside = pinned_beside(Path(config_path).parent) if config_path else {}
    entries: dict[str, TargetVersion] = {}
    for package in PACKAGES:
        flag = (flags or {}).get(package)
        if flag:
            entries[package] = TargetVersion(package, _checked(flag, f"--{package}-version"), f"--{package}-version")
        elif configured and configured.get(package):
            entries[package] = TargetVersion(package, _checked(configured[package], "mldebug.toml"), "mldebug.toml")
        elif package in beside:
            entries[package] = TargetVersion(package, *beside[package])
        else:
            entries[package] = TargetVersions().get(package)
    if framework is not None and entries.get("transformers") and not entries["transformers"].given:
        entries["transformers"] = assumed_transformers(framework, TargetVersions(entries)) or entries["transformers"]
    return TargetVersions(entries)


def framework_pin(framework: str, version: str | None) -> tuple[str, str] | None:
    """(``version`` of ``framework``, else its newest recorded release; the transformers specifier its wheel's
    metadata gives at the newest recorded pin change at or below it) (None: no pin recorded, or the framework does
    not depend on transformers)."""
    package = _DISTRIBUTIONS.get(framework, framework)
    history = record.pins(package)
    if not history:
        return None
    release = version or record.newest_release(package) or history[-1][0]
    below = [h for h in history if parse(h[0]) <= parse(release)]
    pin = (below or history[:1])[-1][1]
    return (release, pin) if pin else None


def assumed_transformers(framework: str, targets: TargetVersions) -> TargetVersion | None:
    """The transformers the run must use when ``framework``'s pin excludes the target one: the newest recorded
    release inside the pin (None: the target one is allowed, or nothing is pinned)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    package = _DISTRIBUTIONS.get(framework, framework)
    own = targets.get(package)
    found = framework_pin(framework, own.version)
    current = targets.get("transformers")
    if found is None:
        return None
    release, pin = found
    try:
        allowed = SpecifierSet(pin)
        if current.version and Version(current.version) in allowed:
            return None
    except (InvalidSpecifier, InvalidVersion):
        return None
    inside = [r for r in record.releases("transformers") if Version(r) in allowed]
    if not inside:
        return None
    shown = VERSION_LABELS.get(package, framework)
    outside = f"; installed {current.version} is outside it" if current.version else ""
    return TargetVersion("transformers", inside[-1],
                         f"{ASSUMED}: the newest {shown} {release} allows, transformers{pin}{outside}")


def _checked(version: str, where: str) -> str:
    from mldebug_cli.core.errors import UsageError

    if not re.match(r"^\d+(\.\d+){0,2}", version.strip()):
        raise UsageError(f"{where}: {version!r} is not a version number", hint="give it as 4.57.1")
    return version.strip()


_PIN = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*===?\s*([0-9][^\s;#,]*)")


def pinned_beside(folder: Path) -> dict[str, tuple[str, str]]:
    """package -> (version, where) from a requirements file or lockfile in ``folder``."""
    found: dict[str, tuple[str, str]] = {}
    for name in REQUIREMENTS_FILES:
        path = folder / name
        if path.is_file():
            for number, line in enumerate(_read(path).splitlines(), 1):
                match = _PIN.match(line)
                package = _normalise(match.group(1)) if match else None
                if match and package in PACKAGES:
                    found.setdefault(package, (match.group(2), f"{path} line {number}"))
    for name in LOCK_FILES:
        path = folder / name
        if path.is_file():
            for package, version in _locked(path).items():
                found.setdefault(package, (version, str(path)))
    return found


def _locked(path: Path) -> dict[str, str]:
    try:
        document = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError:
        return {}
    entries = document.get("package") or document.get("packages") or []
    out = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and _normalise(str(entry.get("name", ""))) in PACKAGES and entry.get("version"):
            out[_normalise(entry["name"])] = str(entry["version"])
    return out


def _read(path: Path) -> str:
    try:
        return read_text(path)
    except (OSError, UnicodeDecodeError):
        return ""


def _normalise(name: str) -> str:
    name = re.sub(r"[-_.]+", "-", name.lower())
    return _DISTRIBUTIONS.get(name, name)


def parse(version: str | None) -> tuple[int, ...]:
    """``"5.23.0.dev0"`` -> ``(5, 23, 0)``; None means the newest checked version."""
    numbers = re.findall(r"\d+", (version or NEWEST_CHECKED_TRANSFORMERS).split("+")[0])[:3]
    return tuple(int(n) for n in numbers)


def behaviour(package: str, name: str, version: str | None) -> object:
    """A behaviour of ``package`` recorded from its wheels, at ``version`` (the newest recorded release at or below
    it; None: the newest checked transformers)."""
    value = None
    for since, now in record.behaviour_history(package, name):
        if parse(since) <= parse(version):
            value = now
    return value


def first_with(package: str, name: str, value: object) -> str | None:
    """The first recorded release of ``package`` whose behaviour ``name`` is ``value``."""
    return next((since for since, now in record.behaviour_history(package, name) if now == value), None)


def warmup_ratio_removed(transformers_version: str | None) -> bool:
    """transformers 5.15 removed the ``warmup_ratio`` field (``warmup_steps`` below 1 is the ratio since 5.0)."""
    return behaviour("transformers", "warmup_ratio", transformers_version) == "absent"


def warmup_ratio_deprecated(transformers_version: str | None) -> bool:
    """5.0 to 5.14: the field is deprecated and ``__post_init__`` copies it into ``warmup_steps``."""
    return behaviour("transformers", "warmup_ratio", transformers_version) == "copied-into-warmup_steps"


def warmup_ratio_removed_in() -> str:
    """The transformers release that removed ``warmup_ratio`` ("5.15" as the wheels say)."""
    first = first_with("transformers", "warmup_ratio", "absent") or "5.15.0"
    return ".".join(first.split(".")[:2])


def float_warmup_steps(transformers_version: str | None) -> bool:
    """Since 5.0 a ``warmup_steps`` below 1 is a ratio of the total steps; before, it is a count (cast to int)."""
    return behaviour("transformers", "warmup_steps_type", transformers_version) != "int"


def logs_next_step_lr(transformers_version: str | None) -> bool:
    """Up to 4.50 the Trainer read the LR after stepping the scheduler: it logged step k+1's LR."""
    return parse(transformers_version) < (4, 51)
