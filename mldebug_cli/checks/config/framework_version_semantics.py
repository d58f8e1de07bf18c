"""A key whose meaning depends on the framework version, and no target version was given.

What it finds
    Keys that mean different things across versions of the framework the config runs on, when
    mldebug had to assume the version (the installed one): `warmup_ratio` (transformers 4.x:
    `ceil(ratio * total steps)` unless `warmup_steps` is set; 5.0-5.14: copied over
    `warmup_steps`; 5.15 and later: not a field, the file is rejected) and a `warmup_steps`
    below 1 (a ratio from transformers 5.0, a step count before); axolotl keys its schema lists as
    deprecated (`DeprecatedParameters`), which older axolotl versions read as settings. Each
    framework profile (`mldebug_cli/frameworks`) names its keys. The message says which version
    was assumed and how to give the real one.

Why it matters for training
    The same file warms up for 10% of the run on one cluster and not at all (or not at all
    starting) on another; a simulation against the wrong version checks the wrong schedule.

Example
    A LLaMA-Factory config with `warmup_ratio: 0.1` checked where transformers 5.23 is installed,
    for a run on transformers 4.57.

Fix
    Give the version the run uses: `--transformers-version 4.57.1` (or `[versions]` in
    `mldebug.toml`, or a pinned `requirements.txt`/lockfile beside the config).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_key
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "info"
SUBJECT = "config"
def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    if review.schema is None:
        return
    for key, (package, change, only) in review.schema.version_dependent.items():
        value = review.config.get(key)
        if value is None or (only == "fraction" and not _fraction(value)):
            continue
        target = review.targets.get(package)
        if target.given:
            continue
        yield Hit(
            message=f"{key} depends on the {package} version ({change}): mldebug assumed "
                    f"{target.describe() if target.version else review.schema.source}",
            hint=f"give the version the run uses: --{package}-version X.Y.Z, [versions] {package} = \"X.Y.Z\" in "
                 "mldebug.toml, or a pinned requirements.txt beside the config",
            location=at_key(review, key),
        )


def _fraction(value) -> bool:
    try:
        return 0 < float(value) < 1
    except (TypeError, ValueError):
        return False
