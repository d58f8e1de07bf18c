"""Config checks (CF001-CF003): each looks at one :class:`~mldebug_cli.frameworks.schema.ConfigReview`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from mldebug_cli.core.findings import Location


def at_key(review, key: str) -> Location:
    return Location(path=review.config.path, key=key, line=review.config.line(key))


def present_keys(review) -> Iterator[tuple[str, str, Any, Any]]:
    """(dotted key, key name, value, schema) for every top-level key and every key of a nested entry list."""
    schema = review.schema
    for name, value in review.config.data.items():
        name = str(name)
        yield name, name, value, schema
        nested = schema.nested.get(name)
        if nested is not None and isinstance(value, list):
            for index, entry in enumerate(value):
                if isinstance(entry, Mapping):
                    for inner, inner_value in entry.items():
                        yield f"{name}.{index}.{inner}", str(inner), inner_value, nested


STABILITY_GUIDE = "https://docs.axolotl.ai/docs/training_stability.html"


def at_setting(review, setting: str, default_key: str) -> Location:
    """Where a trainer setting came from: the config key the framework read it from, or the key to add."""
    facts = review.facts
    key = (facts.keys.get(setting) if facts is not None else None) or default_key
    return Location(path=review.config.path, key=key, line=review.config.line(key))
