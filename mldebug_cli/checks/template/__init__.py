"""CT checks: a chat template as trained versus as deployed (check-template).

Every check inspects one ``TemplateComparison`` (``SUBJECT = "template"``); which check reports a
given text difference is decided in ``mldebug_cli.render.diff`` so that no difference is reported twice.
"""

from __future__ import annotations

from mldebug_cli.core.findings import Location
from mldebug_cli.engines.registry import engine


def at_deploy(subject, probe: str | None = None) -> Location:
    return Location(path=subject.deploy.spec, probe=probe, side="deploy")


def at_train(subject, probe: str | None = None) -> Location:
    return Location(path=subject.train.spec, probe=probe, side="train")


def probe_list(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def serve_hint(subject) -> str:
    """How to make the deploy side render the trained template, for its engine."""
    return engine(subject.deploy.engine).serve_hint
