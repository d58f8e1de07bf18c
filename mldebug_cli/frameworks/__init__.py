"""One folder per training framework, behind ``registry`` (one line each): ``hf`` (transformers Trainer /
TrainingArguments), ``trl``, ``axolotl``, ``llama_factory``, ``torchtune``, ``unsloth``. Each folder's
``framework`` module exports one ``FRAMEWORK`` (a :class:`framework.Framework`): its detection keys and packages,
config reader and key schema, row profile, preference reader and step counting; ``selector`` detects the framework
and hands it the config. A framework's schedulers are its folder's ``SchedulerFamily`` (``hf.schedulers``:
transformers' get_scheduler, which every Trainer-based framework builds; ``axolotl.schedulers``;
``torchtune.framework``), carried on the SchedulerChoice its ``read_spec`` returns, with its ``StepCounting`` where it
does not count steps as the Trainer does. Shared parts, beside the folders: ``schema`` (key lists and types),
``versions`` (target versions and where they came from), ``common`` (typed key reading), ``rows`` (the row profile
base), ``trainer_facts``, ``record``, ``preference_config``, ``subjects``.
This floor sits with ``sources`` and ``render``: below checks and pipelines.
"""

from __future__ import annotations

from typing import Any

# the selector's functions, by the names callers have used since before the registry
_FROM_REGISTRY = frozenset({"detect_framework", "read_spec", "checked_framework", "key_schema", "profile_class",
                            "row_profile", "pair_profile", "read_plan"})


def __getattr__(name: str) -> Any:
    if name in _FROM_REGISTRY:
        import importlib

        return getattr(importlib.import_module("mldebug_cli.frameworks.selector"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
