"""Every check's run() is typed against the subject it reads: one subject type per kind of subject."""

from __future__ import annotations

import inspect

from mldebug_cli.core import registry


def test_every_run_names_the_types_of_its_subject_and_context():
    subjects: dict[str, set[str]] = {}
    for ref in registry.REGISTRY:
        check = registry.load(ref)
        parameters = list(inspect.signature(check.run).parameters.values())
        assert len(parameters) == 2, ref.code
        annotations = [p.annotation for p in parameters]
        assert all(a not in (inspect.Parameter.empty, "Any") for a in annotations), (ref.code, annotations)
        subjects.setdefault(check.subject, set()).add(annotations[0])
    assert {kind: len(types) for kind, types in subjects.items() if len(types) > 1} == {}
