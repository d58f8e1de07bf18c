"""What each release of transformers, TRL, axolotl and LLaMA-Factory has, read from its wheel (the record).

``keys/version-facts.json`` is written by ``tools/version_facts.py`` from the real wheels (``pip download``): the
fields of each config class mldebug checks a file against, with their types and defaults, per release; where each
class was read from; and behaviours (``warmup_ratio``'s handling, axolotl's ``datasets`` union). A field's history
lists the releases where it appears (``[version, [default, kinds, choices?]]``), changes, or disappears
(``[version, null]``). Every version table mldebug uses for a framework that is not installed is read from here;
tests/frameworks/test_version_facts.py checks the record against the wheels, test_version_tables.py mldebug's tables
against the record;
``schema.recorded_keys`` turns a class's fields into the key types the CF checks use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

RECORD = Path(__file__).parent / "keys" / "version-facts.json"


@cache
def _record() -> dict:
    return json.loads(RECORD.read_text(encoding="utf-8"))


def package(name: str) -> dict:
    return _record()["packages"][name]


def number(version: str | None) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", (version or "").split("+")[0])[:3])


def releases(name: str) -> list[str]:
    return package(name)["versions"]


def release_for(name: str, version: str | None) -> str:
    """The recorded release that stands for ``version``: the newest at or below it (the oldest recorded when it is
    older than all of them; the newest when ``version`` is None)."""
    recorded = releases(name)
    if not version:
        return recorded[-1]
    below = [r for r in recorded if number(r) <= number(version)]
    return below[-1] if below else recorded[0]


def _at(history: list, version: str) -> Any:
    value = None
    for since, now in history:
        if number(since) <= number(version):
            value = now
    return value


def histories(name: str, cls: str) -> dict[str, list]:
    """field -> its history in class ``cls`` of package ``name`` (empty when the record has no such class)."""
    return package(name)["classes"].get(cls, {})


def fields(name: str, cls: str, version: str | None) -> dict[str, list]:
    """field -> [default text, kinds, choices?] of class ``cls`` at the release standing for ``version``."""
    release = release_for(name, version)
    return {key: value for key, history in histories(name, cls).items() if (value := _at(history, release)) is not None}


def default(name: str, cls: str, key: str, version: str | None = None) -> str | None:
    """The default of ``cls.key`` as source text (``"1024"``, ``"'no'"``), None when the field is absent."""
    value = fields(name, cls, version).get(key)
    return None if value is None else value[0]


def span(name: str, cls: str, key: str, version: str | None = None) -> tuple[str | None, str | None]:
    """(the first recorded release with ``cls.key``, the first after it without it) around the release standing for
    ``version``: for a key the release lacks, the nearest stretch where it existed, before it or after it."""
    history = histories(name, cls).get(key, [])
    stretches, start = [], None
    for since, now in history:
        if now is not None and start is None:
            start = since
        elif now is None and start is not None:
            stretches.append((start, since))
            start = None
    if start is not None:
        stretches.append((start, None))
    if not stretches:
        return None, None
    release = number(release_for(name, version))
    before = [s for s in stretches if number(s[0]) <= release]
    return before[-1] if before else stretches[0]


def behaviour(name: str, what: str, version: str | None) -> Any:
    return _at(package(name)["behaviours"].get(what, []), release_for(name, version))


def newest_release(name: str) -> str | None:
    """The newest recorded release of ``name``, its classes' or its pin's (None: not recorded)."""
    found = _record()["packages"].get(name, {}).get("versions") or [h[0] for h in _record().get("pins", {}).get(name, [])]
    return found[-1] if found else None


def pins(name: str) -> list:
    """[[release, transformers specifier or None], ...] of framework ``name`` at the releases its pin changes."""
    return _record().get("pins", {}).get(name, [])


def behaviour_history(name: str, what: str) -> list:
    return package(name)["behaviours"].get(what, [])


def where(name: str, cls: str, version: str | None) -> str | None:
    """The file of the wheel class ``cls`` was read from."""
    return _at(package(name)["where"].get(cls, []), release_for(name, version))


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def dropped(name: str, label: str, classes: Iterable[str], present: Iterable[str], version: str | None,
            replaced_by: dict[str, str] | None = None) -> dict[str, str]:
    """key -> a CF001 hint, for each field of ``classes`` that some recorded release of ``name`` has and the release
    standing for ``version`` (whose keys are ``present``) lacks: when it came or went, and what took its place."""
    present, release, out = set(present), release_for(name, version), {}
    for cls in classes:
        has = fields(name, cls, release)
        for key in histories(name, cls):
            if key in present or key in has or key in out:
                continue
            first, gone = span(name, cls, key, release)
            if first is None:
                continue
            if number(first) > number(release):
                when = first if minor(first) == minor(release) else minor(first)
                said = f"added to {cls} in {label} {when}, after {release}"
            elif gone is None:
                said = f"a {cls} field from {label} {minor(first)}, not in {version or release}"
            else:
                said = f"removed from {cls} in {label} {minor(gone)}"
            instead = (replaced_by or {}).get(key)
            flag = label.lower().replace("-", "")
            out[key] = f"{said}: use {instead}" if instead and gone else (
                f"{said}: if the run uses another {label}, say so with --{flag}-version")
    return out
