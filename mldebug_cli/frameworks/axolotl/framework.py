"""axolotl YAML: its keys, its defaults, and which scheduler its trainer builds.

axolotl computes the total steps itself (``calculate_total_num_steps``) and passes them to the HF
Trainer as ``max_steps``; warmup defaults to ``min(int(0.03 * T), 100)``; the default scheduler is
cosine; ``cosine_min_lr_ratio``, ``cosine_constant_lr_ratio`` and ``lr_quadratic_warmup`` select
axolotl's own cosine variants, and ``lr_scheduler: one_cycle|rex`` its alternate schedulers. Those
schedulers and that step counting are ``axolotl.schedulers``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mldebug_cli.core.errors import SETTING_END_OF_TURN_MASKING, InputError
from mldebug_cli.core.registry import Code
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.frameworks import record, schema, versions
from mldebug_cli.frameworks.axolotl.batch_plan import config_plan
from mldebug_cli.frameworks.axolotl.schedulers import COUNTING, SCHEDULERS
from mldebug_cli.frameworks.axolotl.trainer_facts import DEFAULT_SEQUENCE_LEN, axolotl_trainer_facts
from mldebug_cli.frameworks.batch_tokenizer import BatchTokenizer
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.framework import Detection, Framework, VisionPath, VisionRows
from mldebug_cli.frameworks.hf.framework import hf_scheduler_choice
from mldebug_cli.frameworks.hf.schedulers import HF_SCHEDULER_TYPES
from mldebug_cli.frameworks.preference_config import PreferenceConfig, positive_length
from mldebug_cli.frameworks.rows import RowProfile
from mldebug_cli.frameworks.versions import TargetVersions
from mldebug_cli.schedule.model import Packing, RunSpec, SchedulerChoice
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.training_plan import DatasetPlan, Setting, TrainingPlan, at, local, set_key, template_setting

STORED_TEMPLATES = "axolotl-0.19.0-chat-templates.json"  # tools/axolotl_chat_templates.py
FALLBACK_PREFIX = "tokenizer_default_fallback_"
ON_UNKNOWN = "axolotl's pydantic schema drops it without a word (the run trains as if it were absent)"
DATASET_TYPES = {"sharegpt": "sharegpt", "chat_template": None, "completion": "text", "input_output": "text"}
TYPE_KEYS = ("field", "conversation")  # a dataset entry's keys its prompt strategy reads besides type
TERMINATORS = ("all", "turn", "last", "none")


def read_spec(config: ConfigFile, framework: str, world_size: int, targets: TargetVersions,
              task: str | None = None) -> RunSpec:
    r = SpecReader(config)
    if not r.has("learning_rate"):
        raise InputError(f"{config.path}: axolotl configs need learning_rate (it has no default)",
                         hint="axolotl's pydantic schema refuses the file without it")
    learning_rate = float(r.number("learning_rate", "learning_rate", None))
    micro_batch = r.integer("batch_size", "micro_batch_size", 1)
    grad_accum = _grad_accum(r, micro_batch)
    warmup_steps, warmup_ratio = _warmup(r)
    scheduler = _scheduler(r, learning_rate)
    return RunSpec(
        framework="axolotl",
        learning_rate=learning_rate,
        scheduler=scheduler,
        warmup_steps=warmup_steps,
        warmup_ratio=warmup_ratio,
        num_epochs=float(r.number("epochs", "num_epochs", 1)),
        max_steps=r.integer("max_steps", "max_steps", -1),
        batch_size=micro_batch,
        grad_accum=grad_accum,
        world_size=world_size,
        logging_steps=r.number("logging_steps", "logging_steps", None),
        packing=Packing(
            enabled=bool(r.flag("packing", "sample_packing", False)),
            key="sample_packing",
            sequence_len=r.integer(None, "sequence_len", DEFAULT_SEQUENCE_LEN),
            efficiency_estimate=r.number(None, "sample_packing_eff_est", None),
        ),
        validation_split=r.number("validation_split", "val_set_size", None),
        deepspeed=r.raw("deepspeed", "deepspeed"),
        transformers_version=targets.version("transformers"),
        framework_version=targets.version("axolotl"),
        keys=r.keys,
        ignored=tuple(r.ignored),
        notes=tuple(r.notes),
        counting=COUNTING,
        warmup_share_key="warmup_ratio",
    )


def _grad_accum(r: SpecReader, micro_batch: int) -> int:
    if r.has("gradient_accumulation_steps"):
        return r.integer("grad_accum", "gradient_accumulation_steps", 1)
    if r.has("batch_size"):  # axolotl derives accumulation from batch_size // micro_batch_size
        return max(1, r.integer("grad_accum", "batch_size", micro_batch) // micro_batch)
    return 1


def _warmup(r: SpecReader) -> tuple[float | None, float | None]:
    """(warmup_steps, warmup_ratio); both None means axolotl's default, resolved against T."""
    steps = r.number("warmup", "warmup_steps", None)
    ratio = r.number(None, "warmup_ratio", None)
    if steps is not None and ratio is not None:
        r.ignore("warmup_ratio", f"warmup_steps ({steps}) and warmup_ratio are both set: axolotl refuses the "
                 "config (they are mutually exclusive); simulated with warmup_steps", "keep only one of them")
        ratio = None
    elif ratio is not None:
        r.keys["warmup"] = "warmup_ratio"
    return (None if steps is None else float(steps)), (None if ratio is None else float(ratio))


def _scheduler(r: SpecReader, learning_rate: float) -> SchedulerChoice:
    name = str(r.text("scheduler", "lr_scheduler", "cosine"))
    kwargs = r.mapping("scheduler_kwargs", "lr_scheduler_kwargs")
    min_ratio = r.number(None, "cosine_min_lr_ratio", None)
    constant_ratio = r.number(None, "cosine_constant_lr_ratio", None)
    quadratic = bool(r.flag(None, "lr_quadratic_warmup", False))
    if name == "one_cycle":
        _unused(r, "cosine_min_lr_ratio", min_ratio, "one_cycle")
        return SchedulerChoice("one_cycle", SCHEDULERS, kwargs)
    if name == "rex":
        _unused_kwargs(r, kwargs, "rex")
        min_lr = learning_rate * min_ratio if min_ratio is not None else 0.0
        return SchedulerChoice("rex", SCHEDULERS, {"min_lr": min_lr})
    if name == "cosine" and quadratic:
        _unused(r, "cosine_min_lr_ratio", min_ratio, "cosine with lr_quadratic_warmup")
        _unused_kwargs(r, kwargs, "cosine with lr_quadratic_warmup")
        return SchedulerChoice("cosine_quadratic_warmup", SCHEDULERS)
    if name == "cosine" and min_ratio and constant_ratio:
        _unused_kwargs(r, kwargs, "cosine with cosine_min_lr_ratio")
        return SchedulerChoice(
            "cosine_decay_constant", SCHEDULERS, {"min_lr_ratio": min_ratio, "constant_lr_ratio": constant_ratio}
        )
    if name == "cosine" and min_ratio:
        _unused_kwargs(r, kwargs, "cosine with cosine_min_lr_ratio")
        return SchedulerChoice("cosine_min_lr", SCHEDULERS, {"min_lr_ratio": min_ratio})
    if name != "cosine":
        _unused(r, "cosine_min_lr_ratio", min_ratio, name)
        _unused(r, "lr_quadratic_warmup", quadratic or None, name)
    _unused(r, "cosine_constant_lr_ratio", constant_ratio, "a cosine schedule without cosine_min_lr_ratio")
    return hf_scheduler_choice(r, "lr_scheduler", "cosine", kwargs)


def _unused(r: SpecReader, key: str, value, scheduler: str) -> None:
    if value is not None:
        r.ignore(key, f"{key} has no effect with {scheduler}", "remove it, or switch to lr_scheduler: cosine")


def _unused_kwargs(r: SpecReader, kwargs: dict, scheduler: str) -> None:
    if kwargs:
        r.ignore("lr_scheduler_kwargs", f"axolotl builds {scheduler} without lr_scheduler_kwargs: "
                 f"{', '.join(sorted(kwargs))} {'has' if len(kwargs) == 1 else 'have'} no effect")


# which schema class a ``datasets`` entry is read with, by the config's ``rl:``: DPO-style trainers read DPODataset
# (field_chosen, field_rejected, field_messages), KTO KTODataset, SFT (no rl) SFTDataset; for GRPO, GDPO, EBFT and
# the rest any member of the release's ``datasets`` union may take the entry (the record's ``datasets_union``)
SFT_DATASET = "SFTDataset"
RL_DATASETS = {"dpo": ("DPODataset",), "ipo": ("DPODataset",), "orpo": ("DPODataset",), "simpo": ("DPODataset",),
               "kto": ("KTODataset",)}


def dataset_classes(rl: object, release: str) -> tuple[str, ...]:
    """The schema classes a ``datasets`` entry of a config with this ``rl:`` may be read with at ``release``."""
    if not rl:
        return (SFT_DATASET,)
    union = tuple(record.behaviour("axolotl", "datasets_union", release) or (SFT_DATASET,))
    return tuple(c for c in RL_DATASETS.get(str(rl).lower(), union) if c in union) or union


def key_schema(config: ConfigFile, targets: TargetVersions, task: str | None = None) -> schema.KeySchema:
    """AxolotlInputConfig's fields (and, for each ``datasets`` entry, those of the dataset schema its ``rl:`` trainer
    reads: SFTDataset, DPODataset, KTODataset, ...): installed, else the wheels' record at the target release (its
    ``rl:`` key names the trainer; ``task`` decides nothing)."""
    installed = versions.installed("axolotl")
    target = targets.get("axolotl")
    deprecated: Mapping[str, object]  # its keys: the deprecated parameters
    try:
        if not installed or target.version not in (None, installed):
            raise ImportError
        from axolotl.utils.schemas import datasets as dataset_schemas
        from axolotl.utils.schemas.config import AxolotlInputConfig
        from axolotl.utils.schemas.deprecated import DeprecatedParameters

        keys = schema.pydantic_keys(AxolotlInputConfig)
        release = record.release_for("axolotl", installed)
        dataset_keys = {k: v for n in dataset_classes(config.get("rl"), release)
                        for k, v in schema.pydantic_keys(getattr(dataset_schemas, n)).items()}
        deprecated = schema.pydantic_keys(DeprecatedParameters)
        source = f"axolotl {installed} (installed)"
    except ImportError:
        release = record.release_for("axolotl", target.version)
        keys = schema.recorded_keys("axolotl", ("AxolotlInputConfig",), release)
        dataset_keys = schema.recorded_keys("axolotl", dataset_classes(config.get("rl"), release), release)
        deprecated = record.fields("axolotl", "DeprecatedParameters", release)
        wanted = "" if release == target.version or not target.version else f", standing in for {target.describe()}"
        source = f"axolotl {release} (recorded from its wheel{wanted})"
    # axolotl hands lr_scheduler to TrainingArguments unless it is one of its own schedulers
    keys["lr_scheduler"] = schema.KeyType(frozenset({"str"}), (*HF_SCHEDULER_TYPES, "one_cycle", "rex"))
    on_unknown = ON_UNKNOWN + (" unless one of its plugins reads it" if config.get("plugins") else "")
    datasets = schema.KeySchema("axolotl", source, dataset_keys, ON_UNKNOWN)
    changes = {key: ("axolotl", deprecation(key, release), None) for key in deprecated}
    renamed = record.dropped("axolotl", "axolotl", ("AxolotlInputConfig",), keys, release)
    return schema.KeySchema("axolotl", source, keys, on_unknown, nested={"datasets": datasets},
                            version_dependent=changes, renamed=renamed)


def deprecation(key: str, release: str) -> str:
    """What the record says of a key in DeprecatedParameters at ``release``: since when, and what it was before."""
    since, _ = record.span("axolotl", "DeprecatedParameters", key, release)
    said = f"deprecated in axolotl {record.minor(since or release)} (DeprecatedParameters: its validator warns, raises " \
           "or remaps it)"
    recorded = record.releases("axolotl")
    before = recorded[recorded.index(since) - 1] if since in recorded and recorded.index(since) else None
    if before and key in record.fields("axolotl", "AxolotlInputConfig", before) \
            and key not in record.fields("axolotl", "DeprecatedParameters", before):
        said += f", a setting in axolotl {record.minor(before)}"
    return said


def read_plan(config: ConfigFile) -> TrainingPlan:
    """The datasets, template, masking and length an axolotl config sets (defaults: sequence_len 2048, assistant turns)."""
    tokenizer_key = "tokenizer_config" if config.has("tokenizer_config") else "base_model"
    datasets: list[DatasetPlan] = []
    notes: list[str] = []
    for i, entry in enumerate(config.get("datasets") or []):
        if not isinstance(entry, dict) or not entry.get("path"):
            raise InputError(f"{at(config, f'datasets.{i}')}: datasets[{i}] has no path")
        kind, type_options = _dataset_type(entry)
        fmt = _row_format(kind)
        if fmt is None and entry.get("field_messages"):
            fmt = "messages"  # the conversation is under a key of the config's choosing: axolotl reads it there
        path = local(config, str(entry["path"]), entry.get("data_files"))
        masking = _masking(config, f"datasets.{i}") + _reading(config, f"datasets.{i}", entry) + _multimodal(config)
        if kind != "chat_template":
            masking += (("dataset_type", Setting(kind, f"datasets.{i}.type")),
                        ("type_options", Setting(type_options, f"datasets.{i}.type")))
        datasets.append(DatasetPlan(path, f"datasets.{i}.path", fmt, entry.get("split"), masking))
    chat_template = _chat_template(config, notes)
    train_on = Setting("all", "train_on_inputs") if config.get("train_on_inputs") is True else Setting("assistant", set_key(config, "train_on_inputs"))
    max_length = Setting(int(config.get("sequence_len", DEFAULT_SEQUENCE_LEN)), set_key(config, "sequence_len"))
    if config.get("excess_length_strategy", "drop") == "drop" and not config.get("skip_prepare_dataset"):
        notes.append("axolotl drops rows longer than sequence_len (excess_length_strategy: drop): rows flagged as truncated are dropped from training")
    return TrainingPlan("axolotl", Setting(config.get(tokenizer_key), tokenizer_key), chat_template, tuple(datasets), train_on,
                        max_length, tuple(notes), eval_datasets=_test_datasets(config),
                        eval_not_compared=_held_out(config))


def _test_datasets(config: ConfigFile) -> tuple[DatasetPlan, ...]:
    """``test_datasets``: entries shaped as ``datasets``' (axolotl evaluates on them instead of a val_set_size share)."""
    out = []
    for i, entry in enumerate(config.get("test_datasets") or []):
        if isinstance(entry, dict) and entry.get("path"):
            fmt = _row_format(_dataset_type(entry)[0]) or ("messages" if entry.get("field_messages") else None)
            out.append(DatasetPlan(local(config, str(entry["path"]), entry.get("data_files")), f"test_datasets.{i}.path",
                                   fmt, entry.get("split")))
    return tuple(out)


def _held_out(config: ConfigFile) -> tuple[str, ...]:
    """axolotl's ``val_set_size`` share: split off the prepared (tokenized, filtered, deduplicated when asked) rows, so
    which input rows it holds is not known from the input alone."""
    size = config.get("val_set_size")
    if not isinstance(size, (int, float)) or isinstance(size, bool) or size <= 0 or config.get("test_datasets"):
        return ()
    return (f"val_set_size: {size:g} is split off the rows axolotl has already prepared (tokenized, filtered), so "
            "which rows each side holds is not known from the input: save its split and compare it with inspect-data "
            "--eval-dataset",)


def _chat_template(config: ConfigFile, notes: list[str]) -> Setting:
    """axolotl's ``chat_template`` choice: the tokenizer's (tokenizer_default), a .jinja (jinja), one of its named
    templates (read from the installed axolotl, else the stored copy of 0.19.0's), or tokenizer_default_fallback_NAME."""
    choice = config.get("chat_template")
    for i, entry in enumerate(config.get("datasets") or []):
        own = entry.get("chat_template") if isinstance(entry, dict) else None
        if own and own != choice:
            notes.append(f"datasets[{i}] sets its own chat_template {own!r}: mldebug renders every dataset with {choice!r}")
    if choice in (None, "tokenizer_default"):
        return Setting(None)
    if choice == "jinja":
        return template_setting(config, "chat_template_jinja")
    if not isinstance(choice, str):
        raise InputError(f"{at(config, 'chat_template')}: chat_template must name a template")
    name = choice
    if choice.startswith(FALLBACK_PREFIX):
        tokenizer = local(config, str(config.get("tokenizer_config") or config.get("base_model") or ""))
        if _has_template(tokenizer):
            return Setting(None, "chat_template")
        name = choice[len(FALLBACK_PREFIX):]
    path, source = named_template(name)
    if path is None:
        import difflib

        near = difflib.get_close_matches(name, source, n=1)
        raise InputError(f"{at(config, 'chat_template')}: axolotl has no chat template named {name!r} (it raises "
                         "\"Template not found\")", hint=f"did you mean {near[0]!r}?" if near else "use tokenizer_default or jinja")
    notes.append(f"chat_template {choice!r}: axolotl's {name} template, read from {source}")
    label = f"axolotl's {name!r} template, from {source}"
    NAMED_TEMPLATES[str(path)] = label
    return Setting(str(path), "chat_template", own=True, label=label)  # the path guard is for the config's files


def _has_template(tokenizer: str) -> bool:
    """Whether a local tokenizer folder carries a chat template (a hub id: assumed to, as most do)."""
    import json
    from pathlib import Path

    folder = Path(tokenizer)
    if not folder.is_dir():
        return True
    if (folder / "chat_template.jinja").exists() or (folder / "chat_template.json").exists():
        return True
    try:
        return bool(json.loads(read_text(folder / "tokenizer_config.json")).get("chat_template"))
    except (OSError, ValueError):
        return False


def named_template(name: str):
    """(a .jinja file holding axolotl's template ``name``, where it came from); (None, the names there are) when
    axolotl has none by that name. The installed axolotl's own file, else the stored 0.19.0 copy written out once."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("axolotl") if versions.installed("axolotl") else None
    if spec is not None and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations))) / "utils" / "chat_templates" / "templates"
        if folder.is_dir():
            path = folder / f"{name}.jinja"
            names = sorted(p.stem for p in folder.glob("*.jinja"))
            return (path, f"axolotl {versions.installed('axolotl')} (installed)") if path.exists() else (None, names)
    table = schema.stored(STORED_TEMPLATES)
    text = table["templates"].get(name)
    if text is None:
        return None, sorted(table["templates"])
    path = _private_folder() / f"{name}.jinja"  # the chat_template setting names a file
    path.write_text(text, encoding="utf-8")
    return path, f"axolotl {table['version']} (stored copy; axolotl is not installed)"


_FOLDER: list = []
NAMED_TEMPLATES: dict[str, str] = {}  # the file of each named template read → its name, for the report's header


def _private_folder():
    """A folder only this user can write, made once per process and removed when it ends."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    if not _FOLDER:
        _FOLDER.append(Path(tempfile.mkdtemp(prefix="mldebug-axolotl-templates-")))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]


def _dataset_type(entry: dict) -> tuple[str, tuple]:
    """The dataset's type and the options its prompter reads (the dict form is axolotl's user_defined type)."""
    kind = entry.get("type", "chat_template")
    if isinstance(kind, dict):
        return "user_defined", tuple(sorted((str(k), v) for k, v in kind.items()))
    kind = str(kind) if kind is not None else "chat_template"
    return kind, tuple((k, entry[k]) for k in TYPE_KEYS if entry.get(k) is not None)


def _row_format(kind: str) -> str | None:
    """mldebug's row format for a type: chat types from the rows, instruction prompters read their own fields."""
    base = kind.split(":")[0].split(".")[0]
    if base in DATASET_TYPES:
        return DATASET_TYPES[base]
    return "alpaca" if kind == "user_defined" or base.startswith("alpaca") or base in INSTRUCTION_TYPES else None


INSTRUCTION_TYPES = ("gpteacher", "oasst", "jeopardy", "summarizetldr")


def _reading(config: ConfigFile, entry_key: str, entry: dict) -> tuple[tuple[str, Setting], ...]:
    """How the chat_template strategy reads a conversation: field_messages, message_property_mappings (and the
    older message_field_role / message_field_content), roles, split_thinking; checked as axolotl's schema does."""
    found = []
    where = lambda name: at(config, f"{entry_key}.{name}")  # noqa: E731
    if entry.get("field_messages") is not None:
        if not isinstance(entry["field_messages"], str):
            raise InputError(f"{where('field_messages')}: field_messages must name the row's key holding the messages")
        found.append(("field_messages", Setting(entry["field_messages"], f"{entry_key}.field_messages")))
    mappings = entry.get("message_property_mappings") or {}
    if not isinstance(mappings, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mappings.items()):
        raise InputError(f"{where('message_property_mappings')}: message_property_mappings must map message keys to the row's keys")
    mappings = dict(mappings)
    for old, key in (("message_field_role", "role"), ("message_field_content", "content")):
        if isinstance(entry.get(old), str):  # axolotl's schema folds the older keys into the mapping
            mappings.setdefault(key, entry[old])
    if mappings:
        mappings = {"role": "role", "content": "content", **mappings}
        found.append(("message_property_mappings", Setting(tuple(mappings.items()), f"{entry_key}.message_property_mappings")))
    roles = entry.get("roles")
    if roles is not None:
        if not isinstance(roles, dict) or not all(isinstance(v, list) and all(isinstance(n, str) for n in v) for v in roles.values()):
            raise InputError(f"{where('roles')}: roles must map each role to a list of the names that stand for it")
        found.append(("roles", Setting(tuple((str(k), tuple(v)) for k, v in roles.items()), f"{entry_key}.roles")))
    if entry.get("split_thinking") is not None:
        if not isinstance(entry["split_thinking"], bool):
            raise InputError(f"{where('split_thinking')}: split_thinking must be true or false")
        found.append(("split_thinking", Setting(entry["split_thinking"], f"{entry_key}.split_thinking")))
    skipped = tuple(f"{entry_key}.{key}: {what}" for key, what in UNEMULATED_KEYS.items() if entry.get(key) not in (None, False))
    if skipped:
        found.append(("unemulated", Setting(skipped, entry_key)))
    return tuple(found)


def _multimodal(config: ConfigFile) -> tuple[tuple[str, Setting], ...]:
    """The settings axolotl's multimodal collator is built from (its chat_template name picks the processing
    strategy), and why the config's image rows are not emulated, where they are not."""
    choice = config.get("chat_template")
    # read from other keys (no key of their own: the report's "from config" line leaves them out)
    found = [("chat_template_type", Setting(choice))] if isinstance(choice, str) else []
    found.append(("config_folder", Setting(os.path.dirname(os.path.abspath(config.path)))))
    gap: str | None
    if not config.get("processor_type"):
        gap = ("the config sets no processor_type: axolotl does not build its multimodal collator for these rows (its "
               "text path is not emulated on image rows)")
    elif config.get("skip_prepare_dataset") is not True:
        gap = ("processor_type without skip_prepare_dataset: true: axolotl tokenizes the rows with its text "
               "chat_template strategy before the multimodal collator sees them (not emulated)")
    else:
        gap = next((f"{key} on image rows is not emulated ({what})" for key, what in MULTIMODAL_UNEMULATED.items()
                    if config.get(key)), None)
    if gap is not None:
        found.append(("multimodal_gap", Setting(gap)))
    return tuple(found)


# config keys of axolotl's multimodal path that mldebug does not emulate: what they do
MULTIMODAL_UNEMULATED = {
    "sample_packing": "axolotl builds its batch-sampler collator, not the multimodal one",
    "image_size": "each image resized (or padded to a square) before the processor sees it",
    "role_boundaries": "role markers of the config's own replace the strategy's",
}


# chat_template dataset keys mldebug reads but does not emulate: what it does instead
UNEMULATED_KEYS = {
    "drop_system_message": "not emulated; mldebug keeps the system message",
    "chat_template_kwargs": "not passed to the template; mldebug renders with the template's defaults",
}


def _masking(config: ConfigFile, entry: str) -> tuple[tuple[str, Setting], ...]:
    """The chat_template masking keys set for one dataset entry (and the top-level ones), checked as axolotl checks them."""
    found = []
    keyed = [(name, f"{entry}.{name}") for name in ("roles_to_train", "train_on_eos", "train_on_eot", "message_field_training",
                                                    "message_field_training_detail")]
    keyed += [(name, name) for name in ("train_on_inputs", "eot_tokens")]
    for name, key in keyed:
        value = config.get(key)
        if value is None:  # axolotl drops unset (null) keys and applies its defaults
            continue
        if name in ("roles_to_train", "eot_tokens"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(f"{at(config, key)}: {name} must be a list of strings")
            value = tuple(value)
        elif name in ("train_on_eos", "train_on_eot") and value not in TERMINATORS:
            raise InputError(f"{at(config, key)}: {name} must be one of {', '.join(TERMINATORS)}, not {value!r}")
        elif name == "train_on_inputs" and not isinstance(value, bool):
            raise InputError(f"{at(config, key)}: train_on_inputs must be true or false")
        elif name in ("message_field_training", "message_field_training_detail") and not isinstance(value, str):
            raise InputError(f"{at(config, key)}: {name} must name a message key")
        found.append((name, Setting(value, key)))
    return tuple(found)


# --- how axolotl turns rows into ids and labels ---------------------------------------------------------

# --- preference trainers (rl:) ------------------------------------------------------------------------------

AXOLOTL_RL = {"dpo": "dpo", "ipo": "dpo", "kto": "kto", "orpo": "orpo", "grpo": "grpo", "gdpo": "grpo"}
# axolotl's preference prompt strategies (prompt_strategies/dpo, kto, orpo): the first part of a dataset `type:`
AXOLOTL_STRATEGIES = ("chatml", "llama3", "zephyr", "user_defined", "passthrough", "chat_template")


def read_preference(config: ConfigFile, task: str | None, targets: TargetVersions) -> PreferenceConfig | None:
    """``rl:`` (or ``--task``): the TRL trainer axolotl builds, with ``sequence_len`` as its max_length."""
    rl = config.get("rl")
    if rl is None and task is None:
        return None
    if rl is not None and str(rl) not in AXOLOTL_RL:
        raise InputError(f"{at(config, 'rl')}: rl: {rl!r} is not a trainer mldebug emulates",
                         hint=f"mldebug inspects rl: {', '.join(AXOLOTL_RL)} (simpo builds TRL's CPOTrainer)")
    chosen = task or AXOLOTL_RL[str(rl)]
    length_key = "sequence_len" if config.has("sequence_len") else None
    max_length = Setting(None, None) if chosen == "grpo" else Setting(
        positive_length(config, length_key, config.get("sequence_len", DEFAULT_SEQUENCE_LEN)), length_key)
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


CHAT_FORMATS = ("messages", "sharegpt", "alpaca")
CHAT_TYPES = ("chat_template", "sharegpt", "messages")  # types masked by axolotl's chat_template strategy


class Rows(RowProfile):
    """axolotl: chat rows masked by its chat_template strategy (``axolotl.chat_template``: its turn rules, EOS/EOT
    training), instruction rows by its prompters (``axolotl.prompters``), EOS appended to text, rows longer
    than sequence_len dropped (excess_length_strategy: drop)."""

    framework = "axolotl"
    resizes_embeddings = True  # its model loader grows the embeddings when the tokenizer is longer (docs/faq.qmd)
    default_train_on = "assistant"
    truncation = "drop"
    appends_eos = True
    template_error_stops_run = "axolotl tokenizes every row in one datasets.map while it prepares the dataset"
    reads_message_weights = False  # its chat_template strategy keeps the mapped keys only: a loss_weight is dropped

    def __init__(self, options: Any = None, masking: Any = None, prompter: Any = None, tokenizer: Any = None,
                 unemulated: tuple[tuple[str, str], ...] = ()) -> None:
        self.options = options  # chat_template.AxolotlOptions from a config, else None (its defaults with --train-on)
        self.masking = masking  # resolved against the tokenizer: chat rows only
        self.prompter = prompter  # axolotl_prompters.Prompter, "completion" or "input_output": rows it prompts itself
        self.tokenizer = tokenizer
        self.unemulated = unemulated
        if prompter is not None and tokenizer is not None:  # a prompter's prompt and reply: one call per batch
            self.batched = BatchTokenizer(tokenizer)

    def chat_template_line(self, source: str | None) -> str | None:
        """A named template by its name, not the path of the file mldebug wrote it to."""
        return NAMED_TEMPLATES.get(source or "", source)

    @property
    def masking_method(self) -> str | None:
        if self.prompter is not None:
            kind = self.prompter if isinstance(self.prompter, str) else self.prompter.kind
            return f"axolotl's {kind} prompter (its own prompt text and tokenization; no chat template)"
        return f"axolotl chat_template masking ({self.masking.describe()})" if self.masking is not None else None

    def unmarked_masking(self) -> tuple[str, str] | None:
        if self.masking is None:
            return None
        return ("the chat template has no {% generation %} markers (axolotl does not use them either); assistant turns"
                " were masked as axolotl's chat_template masks them: each turn's content, then its EOS/EOT token",
                "axolotl's eot_tokens, roles_to_train and train_on_eos decide the mask")

    def end_of_turn_hint(self) -> str | None:
        """axolotl trains only eot_tokens / EOS ids found within 3 tokens of a turn's content."""
        if self.masking is None:
            return None
        return "list {token} in axolotl's eot_tokens and keep train_on_eot (or train_on_eos) at turn"

    @property
    def train_on_inputs(self) -> bool:
        return bool(self.options and self.options.train_on_inputs)

    def train_on(self, given: str | None, row_format: str) -> str:
        if self.prompter is not None:
            return "all" if self.train_on_inputs or self.prompter == "completion" else "completion"
        if self.options is not None and not (row_format == "prompt-completion" and given is None):
            return "all" if self.options.trains_beyond_assistant else "assistant"
        return super().train_on(given, row_format)

    def renders_chat(self, row_format: str) -> bool:
        return self.prompter is None and super().renders_chat(row_format)

    def training_template(self, loaded: Any, row_format: str, train_on: str) -> tuple[Any, Any]:
        """A prompter writes its own prompt text: the chat template plays no part (nor do the checks that read it)."""
        if self.prompter is None:
            return loaded, None
        kind = self.prompter if isinstance(self.prompter, str) else self.prompter.kind
        return replace(loaded, chat_template=None, template_source=f"none: axolotl's {kind} prompter writes the prompt"), None

    def not_emulated(self) -> list:
        from mldebug_cli.frameworks.rows import NotEmulated

        return [NotEmulated(message, key) for key, message in self.unemulated]

    def own_sample(self, raw: Any) -> Any:
        from mldebug_cli.frameworks.axolotl import prompters as axolotl_prompters

        if self.prompter is None:
            return self._conversation(raw)
        field = dict(self.options.type_options).get("field") if self.options else None
        return axolotl_prompters.read(self.prompter, raw, str(field or "text"))

    def _conversation(self, raw: Any) -> Any:
        """A chat row read as axolotl reads it when the config says where and how (None: the messages converter)."""
        from mldebug_cli.frameworks.axolotl import chat_template as axolotl
        from mldebug_cli.sources.row_formats import Chat, RowProblem, _tools, _validated_messages

        if self.masking is None:
            return None
        options = self.masking.options
        if not options.reads_own_messages and not axolotl.reads_itself(raw):
            return None
        try:
            messages = axolotl.read_conversation(raw, options)
        except ValueError as exc:
            raise RowProblem(Code.INVALID_MESSAGES, str(exc)) from None
        key = options.field_messages or "messages"
        # no assistant turn: axolotl masks the row as any other (its flags or settings may train it), and drops it
        # when nothing is trained
        # a role the config does not map reaches the template as it is, as axolotl hands it over (the template
        # renders it, DS011 on the row, or raises: DS009, and the dataset map stops the run)
        return Chat(_validated_messages(messages, key, require_assistant=False, roles_as_given=True),
                    _tools(raw) if isinstance(raw, dict) else None)

    def encodes(self, sample: Any) -> bool:
        from mldebug_cli.frameworks.axolotl.prompters import Prompted

        return isinstance(sample, Prompted)

    def encode(self, sample: Any, setup: Any) -> Any:
        from mldebug_cli.frameworks.axolotl import prompters as axolotl_prompters

        limit = setup.max_length if setup.max_length is not None else UNLIMITED
        return axolotl_prompters.encode(sample, self.batched or self.tokenizer, limit, self.train_on_inputs, len(sample.messages) - 1)

    def reads(self, sample: Any, raw: Any) -> Any:
        from mldebug_cli.frameworks.axolotl import chat_template as axolotl
        from mldebug_cli.sources.row_formats import Chat

        if self.masking is None or not isinstance(sample, Chat):
            return sample
        return replace(sample, messages=axolotl.as_axolotl_reads(sample.messages, raw, self.masking))

    def locator(self, renderer: Any, setup: Any) -> Any:
        from mldebug_cli.frameworks.axolotl import chat_template as axolotl

        return axolotl.AxolotlLocator(renderer, self.masking) if self.masking is not None else super().locator(renderer, setup)

    def lay_out(self, sample: Any, setup: Any, renderer: Any, locator: Any) -> Any:
        from mldebug_cli.sources.row_formats import Chat

        if self.masking is None or not isinstance(sample, Chat):
            return None
        return locator.layout(sample.messages, sample.tools)

    def label(self, row: Any, encoding: Any, ids: list[int], setup: Any):
        from mldebug_cli.frameworks.axolotl import chat_template as axolotl

        if row.layout is None or row.layout.method != axolotl.METHOD:
            return None
        return axolotl.label_tokens(encoding, ids, row.layout, self.masking, row.sample.messages, self.tokenizer)


UNLIMITED = 1 << 40  # no sequence_len given (inspect-data without --max-length): nothing is cut or dropped


def row_profile(options: Any, loaded: Any, row_format: str) -> Rows:
    """axolotl's prompter for instruction types, else its chat_template masking for chat rows: the config's
    settings, else its defaults with --train-on all or last."""
    from mldebug_cli.core.errors import InputError
    from mldebug_cli.frameworks.axolotl import chat_template as axolotl
    from mldebug_cli.frameworks.axolotl import prompters as axolotl_prompters

    given = options.framework_options
    kind = given.dataset_type if given is not None else None
    kind = kind or ("alpaca" if row_format == "alpaca" else "chat_template")
    unemulated = tuple((what.split(":")[0], what) for what in given.unemulated) if given else ()
    if kind.split(":")[0] not in CHAT_TYPES:
        prompter = axolotl_prompters.prompter(kind, dict(given.type_options) if given is not None else {})
        if prompter is not None:
            if given is None:
                given = axolotl.AxolotlOptions(train_on_inputs=options.train_on == "all", dataset_type=kind)
            return Rows(given, None, prompter, loaded.tokenizer)
        how = ("rendered with the chat template and masked as axolotl's chat_template strategy masks"
               if row_format in CHAT_FORMATS else f"read as {row_format} rows, as --framework axolotl reads them")
        unemulated += (("type", f"axolotl dataset type {kind!r}: mldebug does not emulate its prompt strategy; the rows"
                                f" were {how}"),)
    if row_format not in CHAT_FORMATS:
        return Rows(given, unemulated=unemulated)
    train_on = options.train_on
    settings = given or axolotl.AxolotlOptions(train_on_inputs=train_on == "all", last_turn_only=train_on == "last")
    try:
        masking = axolotl.AxolotlMasking.resolve(settings, loaded.tokenizer, loaded.chat_template)
    except axolotl.AxolotlConfigError as exc:
        raise InputError(f"axolotl refuses these settings: {exc}", hint="fix eot_tokens / train_on_eos / train_on_eot",
                         setting=SETTING_END_OF_TURN_MASKING) from None
    return Rows(given, masking, tokenizer=loaded.tokenizer, unemulated=unemulated)


def _vision_path(options: Any, processor: Any, folder: Any) -> VisionPath:
    """axolotl's multimodal collator (vision.py), imported when a dataset has image rows: the config's settings (its
    first dataset's masking keys, as axolotl's builder takes them), else axolotl's defaults."""
    from mldebug_cli.frameworks.axolotl.chat_template import AxolotlOptions
    from mldebug_cli.frameworks.axolotl.vision import MultimodalSettings, vision_path

    own = options.framework_options if isinstance(options.framework_options, AxolotlOptions) else AxolotlOptions(
        train_on_inputs=options.train_on == "all")
    name = own.chat_template_type
    # the template file the config's chat_template resolves to (a named one, or chat_template_jinja); None: the tokenizer's
    template = read_text(options.chat_template) if options.chat_template else None
    settings = MultimodalSettings(name, template, own.train_on_inputs, own.roles_to_train, own.train_on_eos,
                                  own.field_messages, own.config_folder)
    return vision_path(options, processor, folder, settings, own.multimodal_gap)


def masking_options(dataset: DatasetPlan, train_on: str | None = None):
    """The dataset's chat_template masking settings over axolotl's defaults (``train_on``: --train-on, which wins)."""
    from mldebug_cli.frameworks.axolotl.chat_template import AxolotlOptions

    masking = {name: setting.value for name, setting in dataset.masking}
    if train_on is not None:
        masking.update(train_on_inputs=train_on == "all", last_turn_only=train_on == "last")
    return AxolotlOptions(**masking)


def dataset_options(plan: TrainingPlan, dataset: DatasetPlan, train_on: str | None):
    """One of the config's datasets' row options: its masking settings (the plan's own are the first's)."""
    return masking_options(dataset, train_on)


FRAMEWORK = Framework(
    name="axolotl",
    versioned=("axolotl", "transformers"),
    detection=Detection(rank=1, keys=frozenset({"base_model", "micro_batch_size", "num_epochs", "sample_packing",
                                               "lr_scheduler", "sequence_len", "val_set_size"}), at_least=2),
    read_spec=read_spec,
    key_schema=key_schema,
    read_plan=read_plan,
    read_preference=read_preference,
    dataset_options=dataset_options,
    end_of_turn_keys=("eot_tokens", "train_on_eot", "train_on_eos"),
    rows=Rows,
    row_profile=row_profile,
    trainer_facts=axolotl_trainer_facts,
    prepared_plan=config_plan,  # batch_plan.py: its dataset preparation, then its sampler
    # vision.py: processor_type rows through MultiModalChatDataCollator and the chat_template's processing strategy
    vision=VisionRows(("sft",), "axolotl's multimodal collator", _vision_path, refused=dict.fromkeys(
        ("dpo", "kto"), "axolotl 0.19 prepares preference datasets with the tokenizer alone (load_preference_datasets "
        "loads no processor) and hands TRL 1.9's trainer the tokenizer as processing_class (core/builders/rl.py), so the "
        "image column it keeps makes the trainer raise ValueError (The dataset appears to be vision-related (contains "
        "'image' or 'images' keys), but the provided model does not seem to be a vision-language model)")),
)
