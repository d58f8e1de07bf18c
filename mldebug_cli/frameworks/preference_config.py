"""Which preference or RL trainer a training config is for, and the settings its data preparation reads.

- TRL: DPOConfig, KTOConfig, ORPOConfig or GRPOConfig, named by ``--task`` or read from the keys (a key only one
  class has decides: ``num_generations`` GRPO, ``desirable_weight`` KTO, ``max_completion_length`` without GRPO keys
  ORPO; else the class sharing the most keys with the file, DPO first). ``max_length`` defaults to 1024 (DPO, KTO,
  ORPO); GRPO prompts are not cut in TRL 1.16. The ``trl grpo`` script's ``reward_funcs`` names TRL's own reward
  functions, whose required columns are known (``accuracy_reward`` reads ``solution``).
- axolotl: ``rl: dpo|ipo|kto|orpo|grpo|gdpo`` (simpo builds TRL's CPOTrainer, which mldebug does not emulate);
  ``sequence_len`` becomes the trainer's ``max_length``; ``trl:`` holds the GRPO keys. A dataset ``type:`` naming one
  of axolotl's preference strategies (``chatml.intel``, ``llama3.argilla``, ...) rewrites the rows into prompt /
  chosen / rejected strings with axolotl's own formatting: mldebug does not emulate those strategies and inspects
  the rows' own columns, and says so.
- LLaMA-Factory: ``stage: dpo`` (``pref_loss`` sigmoid, orpo, simpo, ...) and ``stage: kto``, ``cutoff_len`` as
  the length. Stage dpo's pairwise processor is emulated (the preference pipeline hands the rows to the
  LLaMA-Factory row profile's ``encode_pair``, with the config's ``template`` and ``cutoff_len``); its KTO processor
  is not: KTO rows are rendered with the tokenizer's chat template and prepared as TRL 1.16 does, and the report
  says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.frameworks import versions
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
AXOLOTL_RL = {"dpo": "dpo", "ipo": "dpo", "kto": "kto", "orpo": "orpo", "grpo": "grpo", "gdpo": "grpo"}
# axolotl's preference prompt strategies (prompt_strategies/dpo, kto, orpo): the first part of a dataset `type:`
AXOLOTL_STRATEGIES = ("chatml", "llama3", "zephyr", "user_defined", "passthrough", "chat_template")
LLAMA_FACTORY_STAGES = {"dpo": "dpo", "kto": "kto"}


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


def read_preference(config: ConfigFile, framework: str, task: str | None,
                    targets: versions.TargetVersions) -> PreferenceConfig | None:
    """The preference trainer a config is for (None: supervised fine-tuning)."""
    if task is not None and task not in (*TASKS, "sft"):
        raise UsageError(f"--task: unknown task {task!r}", hint=f"one of sft, {', '.join(TASKS)}")
    if task == "sft":
        return None
    if framework == "axolotl":
        return _axolotl(config, task)
    if framework == "llama-factory":
        return _llama_factory(config, task)
    if framework in ("trl", "transformers"):
        return _trl(config, task, targets)
    return None


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


def _trl(config: ConfigFile, task: str | None, targets: versions.TargetVersions) -> PreferenceConfig | None:
    from mldebug_cli.frameworks.trl import trl_keys

    own, _ = trl_keys(targets)
    name = trl_config_class(config.data, own, task)
    chosen = TRL_CLASSES[name]
    if chosen is None:
        return None
    decided_by = "--task" if task else _deciding_key(config, own, name)
    notes, not_emulated = [], []
    target = targets.get("trl")
    if target.version and target.version != EMULATED_TRL:
        not_emulated.append(f"the run uses {target.describe()}; mldebug prepares the rows as TRL {EMULATED_TRL} "
                            "does (older TRL cut prompts to max_prompt_length and added BOS/EOS ids in DPO)")
    length_key = "max_length" if config.has("max_length") else None
    if chosen == "grpo":
        max_length = Setting(None, None)
        if config.has("max_prompt_length"):
            notes.append("GRPOConfig in TRL 1.16 has no max_prompt_length: prompts are not cut")
    else:
        value = config.get("max_length") if length_key else DEFAULT_MAX_LENGTH
        max_length = Setting(_length(config, length_key, value), length_key)
    mode_key = "truncation_mode" if chosen == "dpo" and config.has("truncation_mode") else None
    mode = Setting(str(config.get("truncation_mode")) if mode_key else None, mode_key)
    rewards = _trl_reward_columns(config, notes) if chosen == "grpo" else Setting((), None)
    return PreferenceConfig(chosen, f"TRL {name}", decided_by, max_length, mode, rewards, tuple(not_emulated),
                            tuple(notes))


def _deciding_key(config: ConfigFile, own: Mapping[str, Mapping[str, Any]], name: str) -> str:
    others = set().union(*(own[o] for o in TRL_CLASSES if o != name))
    keys = [k for k in config.data if k in own[name]]
    return next((k for k in keys if k not in others), next((k for k in keys if k not in own["SFTConfig"]), keys[0]))


def _trl_reward_columns(config: ConfigFile, notes: list[str]) -> Setting:
    names = config.get("reward_funcs")
    if not names:
        return Setting((), None)
    if not isinstance(names, list):
        names = [names]
    columns: list[str] = []
    for name in map(str, names):
        if name in TRL_REWARD_COLUMNS:
            columns += [c for c in TRL_REWARD_COLUMNS[name] if c not in columns]
        else:
            notes.append(f"reward function {name!r}: mldebug cannot tell which columns it reads (pass --reward-columns)")
    return Setting(tuple(columns), "reward_funcs")


def _length(config: ConfigFile, key: str | None, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 1:
        raise InputError(f"{at(config, key)}: {key} must be a positive whole number, got {value!r}")
    return int(value)


def _axolotl(config: ConfigFile, task: str | None) -> PreferenceConfig | None:
    from mldebug_cli.frameworks.axolotl import DEFAULT_SEQUENCE_LEN

    rl = config.get("rl")
    if rl is None and task is None:
        return None
    if rl is not None and str(rl) not in AXOLOTL_RL:
        raise InputError(f"{at(config, 'rl')}: rl: {rl!r} is not a trainer mldebug emulates",
                         hint=f"mldebug inspects rl: {', '.join(AXOLOTL_RL)} (simpo builds TRL's CPOTrainer)")
    chosen = task or AXOLOTL_RL[str(rl)]
    length_key = "sequence_len" if config.has("sequence_len") else None
    max_length = Setting(None, None) if chosen == "grpo" else Setting(
        _length(config, length_key, config.get("sequence_len", DEFAULT_SEQUENCE_LEN)), length_key)
    notes = ["axolotl passes sequence_len to the TRL trainer as max_length"] if chosen != "grpo" else []
    rewards = Setting((), None)
    if chosen == "grpo" and config.get("trl.reward_funcs"):
        notes.append("trl.reward_funcs names Python functions: mldebug cannot tell which columns they read "
                     "(pass --reward-columns)")
    not_emulated = [_strategy_gap(entry, i) for i, entry in enumerate(config.get("datasets") or [])]
    if chosen != "grpo":
        not_emulated.append("axolotl drops pairs whose prompt+chosen or prompt+rejected is longer than sequence_len "
                            "before the trainer sees them (drop_long_rl_seq); mldebug does not count those")
    trainer = f"axolotl rl: {rl}" if rl is not None else f"axolotl (--task {task})"
    return PreferenceConfig(chosen, trainer, "rl" if rl is not None else "--task", max_length, Setting(None, None),
                            rewards, tuple(g for g in not_emulated if g), tuple(notes))


def _strategy_gap(entry: Any, i: int) -> str | None:
    kind = entry.get("type") if isinstance(entry, dict) else None
    if not isinstance(kind, str) or not kind:
        return None
    family = kind.split(".")[0]
    what = ("one of axolotl's preference prompt strategies" if family in AXOLOTL_STRATEGIES
            else "a dataset type mldebug does not know")
    return (f"datasets[{i}] type {kind!r} is {what}: axolotl rewrites each row into prompt/chosen/rejected text "
            "with its own formatting, which mldebug does not emulate; it inspected the rows' own columns "
            "(prompt/chosen/rejected, or LLaMA-Factory-style pairs) with the tokenizer's chat template")


def _llama_factory(config: ConfigFile, task: str | None) -> PreferenceConfig | None:
    from mldebug_cli.frameworks.hf import LLAMA_FACTORY_DEFAULT_CUTOFF

    stage = str(config.get("stage", "sft"))
    if task is None and stage not in LLAMA_FACTORY_STAGES:
        return None
    chosen = task or LLAMA_FACTORY_STAGES[stage]
    loss = config.get("pref_loss", "sigmoid")
    trainer = f"LLaMA-Factory stage: {stage}" + (f", pref_loss: {loss}" if stage == "dpo" else "")
    length_key = "cutoff_len" if config.has("cutoff_len") else None
    max_length = Setting(_length(config, length_key, config.get("cutoff_len", LLAMA_FACTORY_DEFAULT_CUTOFF)),
                         length_key)
    if task is None:
        llama_factory_ranking(config, chosen, _llama_factory_entries(config))
    gaps = () if chosen != "kto" else (
        "LLaMA-Factory prepares KTO rows with its own processor (its `template`, cutoff_len split between prompt and "
        "reply by infer_seqlen); mldebug does not emulate it: the rows were rendered with the tokenizer's chat "
        "template and prepared as TRL 1.16 does",)
    notes = () if chosen == "kto" else (
        "pairs encoded as LLaMA-Factory's pairwise processor encodes them (its `template`, cutoff_len split between "
        "the prompt and the longer reply by infer_seqlen)",)
    return PreferenceConfig(chosen, trainer, "stage" if task is None else "--task", max_length, Setting(None, None),
                            Setting((), None), gaps, notes)


def _llama_factory_entries(config: ConfigFile) -> dict[str, Any]:
    """The config's datasets as dataset_info.json describes them (read_plan has checked that they are there)."""
    import json

    from mldebug_cli.sources.training_plan import resolve_dir

    names = config.get("dataset")
    names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names or [])
    info_path = resolve_dir(config, str(config.get("dataset_dir", "data"))) / "dataset_info.json"
    try:
        info = json.loads(read_text(info_path))
    except FileNotFoundError:
        raise InputError(f"{info_path} not found (dataset_dir is {config.get('dataset_dir', 'data')!r})") from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, a number too long
        raise InputError(f"{info_path}: not readable JSON ({' '.join(str(exc).split())[:200]})") from None
    if not isinstance(info, dict):
        raise InputError(f"{info_path}: expected a JSON object of datasets")
    return {name: info.get(name) for name in names}


def llama_factory_ranking(config: ConfigFile, task: str, entries: Mapping[str, Any]) -> None:
    """LLaMA-Factory refuses a dataset whose ``ranking`` does not fit the stage (data/loader.py): DPO reads the
    datasets as the reward-model stage does (``ranking: true``), KTO as unpaired rows."""
    for name, entry in entries.items():
        ranking = bool(entry.get("ranking", False)) if isinstance(entry, Mapping) else False
        if ranking != (task != "kto"):
            want = "ranking: true" if task != "kto" else "no ranking"
            raise InputError(
                f"{at(config, 'dataset')}: dataset {name!r} does not fit stage {config.get('stage')}: LLaMA-Factory "
                "raises 'The dataset is not applicable in the current training stage.'",
                hint=f"a {task} stage needs datasets with {want} in dataset_info.json")
