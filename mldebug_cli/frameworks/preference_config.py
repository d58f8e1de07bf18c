"""Which preference or RL trainer a training config is for, and the settings its data preparation reads: the
framework-neutral record (``PreferenceConfig``), and the dispatch to each framework's own reader
(``FRAMEWORK.read_preference``, in its module). What the readers read:

- TRL (``trl.read_preference``): DPOConfig, KTOConfig, ORPOConfig or GRPOConfig, named by ``--task`` or read from the keys (a key only one
  class has decides: ``num_generations`` GRPO, ``desirable_weight`` KTO, ``max_completion_length`` without GRPO keys
  ORPO; else the class sharing the most keys with the file, DPO first). ``max_length`` defaults to 1024 (DPO, KTO,
  ORPO); GRPO prompts are not cut in TRL 1.16. The ``trl grpo`` script's ``reward_funcs`` names TRL's own reward
  functions, whose required columns are known (``accuracy_reward`` reads ``solution``).
- axolotl (``axolotl.read_preference``): ``rl: dpo|ipo|kto|orpo|grpo|gdpo`` (simpo builds TRL's CPOTrainer, which mldebug does not emulate);
  ``sequence_len`` becomes the trainer's ``max_length``; ``trl:`` holds the GRPO keys. A dataset ``type:`` naming one
  of axolotl's preference strategies (``chatml.intel``, ``llama3.argilla``, ...) rewrites the rows into prompt /
  chosen / rejected strings with axolotl's own formatting: mldebug does not emulate those strategies and inspects
  the rows' own columns, and says so.
- LLaMA-Factory (``llama_factory.read_preference``): ``stage: dpo`` (``pref_loss`` sigmoid, orpo, simpo, ...) and ``stage: kto``, ``cutoff_len`` as
  the length. Stage dpo's pairwise processor and stage kto's feedback processor are emulated (the preference
  pipeline hands the rows to the LLaMA-Factory row profile's ``encode_pair``, with the config's ``template`` and
  ``cutoff_len``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.training_plan import Setting, at

TASKS = ("dpo", "kto", "orpo", "grpo")
EMULATED_TRL = "1.16.0"
TRL_CLASSES = {"DPOConfig": "dpo", "KTOConfig": "kto", "ORPOConfig": "orpo", "GRPOConfig": "grpo", "SFTConfig": None}
CLASS_OF_TASK = {task: name for name, task in TRL_CLASSES.items() if task}
DEFAULT_MAX_LENGTH = 1024  # DPOConfig, KTOConfig and ORPOConfig
# TRL's own reward functions (trl.rewards, the `trl grpo` registry) and the dataset columns they take as kwargs
TRL_REWARD_COLUMNS = {"accuracy_reward": ("solution",), "reasoning_accuracy_reward": ("solution",),
                      "think_format_reward": (), "get_soft_overlong_punishment": ()}


@dataclass(frozen=True)
class PreferenceConfig:
    """What preflight hands the preference pipeline, each value with the config key that set it."""

    task: str  # dpo, kto, orpo, grpo: how the rows are prepared
    trainer: str  # as the report names it: "TRL DPOConfig", "axolotl rl: ipo", "LLaMA-Factory stage: dpo"
    decided_by: str  # the config key (or flag) that made it a preference run
    max_length: Setting
    truncation_mode: Setting
    reward_columns: Setting  # a tuple of column names
    not_emulated: tuple[str, ...] = ()  # what the framework does to the rows that mldebug does not reproduce
    notes: tuple[str, ...] = ()


def checked_task(task: str | None) -> str | None:
    """``--task`` as given, refused unless sft or a preference task."""
    if task is not None and task not in (*TASKS, "sft"):
        raise UsageError(f"--task: unknown task {task!r}", hint=f"one of sft, {', '.join(TASKS)}")
    return task


def trl_config_class(data: Mapping[str, Any], own: Mapping[str, Mapping[str, Any]], task: str | None = None) -> str:
    """The TRL config class a file is for: the one ``task`` names, else the one its keys point at (SFTConfig)."""
    if task in CLASS_OF_TASK:
        return CLASS_OF_TASK[task]
    keys = set(data)
    names = list(TRL_CLASSES)
    distinct = {name: {k for k in own[name] if all(k not in own[o] for o in names if o != name)} for name in names}
    scored = {name: (len(keys & distinct[name]), len(keys & set(own[name]))) for name in names}
    best = max(names, key=lambda n: (scored[n], n == "SFTConfig", n == "DPOConfig"))
    return best if scored[best] > (0, 0) and _points_at_preference(keys, own, best) else "SFTConfig"


def _points_at_preference(keys: set[str], own: Mapping[str, Mapping[str, Any]], name: str) -> bool:
    """A file whose only TRL keys are ones SFTConfig has too stays supervised."""
    return name == "SFTConfig" or bool(keys & (set(own[name]) - set(own["SFTConfig"])))


def positive_length(config: ConfigFile, key: str | None, value: Any) -> int | None:
    """A length setting's value, refused unless a positive whole number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 1:
        raise InputError(f"{at(config, key)}: {key} must be a positive whole number, got {value!r}")
    return int(value)


