"""mldebug's version tables equal what the wheels' record says (keys/version-facts.json, tools/version_facts.py), so a
hand edit of a default, a rename or a boundary is caught; and the claims that the record corrected."""

from __future__ import annotations

import ast
import json

import pytest

from mldebug_cli.frameworks import record, schema, versions
from mldebug_cli.frameworks.axolotl import framework as axolotl
from mldebug_cli.frameworks.hf import framework as hf
from mldebug_cli.frameworks.llama_factory import framework as llama_factory
from mldebug_cli.frameworks.trl import framework as trl

# the releases mldebug emulates (its data semantics were checked row for row against these)
EMULATED = {"trl": "1.16.0", "axolotl": "0.19.0", "llamafactory": "0.9.5", "transformers": versions.NEWEST_CHECKED_TRANSFORMERS}


def recorded_default(package: str, cls: str, key: str, version: str | None = None):
    text = record.default(package, cls, key, version or EMULATED[package])
    assert text is not None, f"{package} {cls}.{key} is not in the record"
    return ast.literal_eval(text)


# (mldebug's constant, its value, package, class, field)
CONSTANTS = [
    ("hf.TrainerDefaults().learning_rate", hf.TrainerDefaults().learning_rate, "transformers", "TrainingArguments", "learning_rate"),
    ("hf.TrainerDefaults().logging_steps", hf.TrainerDefaults().logging_steps, "transformers", "TrainingArguments", "logging_steps"),
    ("trl.DEFAULT_LR", trl.DEFAULT_LR, "trl", "SFTConfig", "learning_rate"),
    ("trl.DEFAULT_LOGGING_STEPS", trl.DEFAULT_LOGGING_STEPS, "trl", "SFTConfig", "logging_steps"),
    ("trl.DEFAULT_MAX_LENGTH", trl.DEFAULT_MAX_LENGTH, "trl", "SFTConfig", "max_length"),
    ("trl.PREFERENCE_LR", trl.PREFERENCE_LR, "trl", "DPOConfig", "learning_rate"),
    ("trl.PREFERENCE_LR", trl.PREFERENCE_LR, "trl", "KTOConfig", "learning_rate"),
    ("trl.PREFERENCE_LR", trl.PREFERENCE_LR, "trl", "ORPOConfig", "learning_rate"),
    ("trl.PREFERENCE_LR", trl.PREFERENCE_LR, "trl", "GRPOConfig", "learning_rate"),
    ("hf.GRPO_NUM_GENERATIONS", hf.GRPO_NUM_GENERATIONS, "trl", "GRPOConfig", "num_generations"),
    ("axolotl.DEFAULT_SEQUENCE_LEN", axolotl.DEFAULT_SEQUENCE_LEN, "axolotl", "AxolotlInputConfig", "sequence_len"),
    ("llama_factory.DEFAULT_CUTOFF", llama_factory.DEFAULT_CUTOFF, "llamafactory", "DataArguments", "cutoff_len"),
]


@pytest.mark.parametrize(("name", "value", "package", "cls", "key"), CONSTANTS, ids=[f"{c[0]}-{c[3]}" for c in CONSTANTS])
def test_each_default_constant_is_the_recorded_default(name, value, package, cls, key):
    assert value == recorded_default(package, cls, key), name


def _facts(tmp_path, config: dict, framework: str):
    from mldebug_cli.frameworks.selector import read_trainer_facts

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return read_trainer_facts(path, framework)


# (a config holding only what picks the trainer, the framework, {TrainerFacts attribute: (class, field)})
TRL_MODEL = {"peft.r": ("ModelConfig", "lora_r"), "peft.alpha": ("ModelConfig", "lora_alpha"),
             "peft.dropout": ("ModelConfig", "lora_dropout")}
DEFAULTS = [
    ({"output_dir": "out"}, "trl", "sft", {
        "max_length": ("SFTConfig", "max_length"), "learning_rate": ("SFTConfig", "learning_rate"),
        "micro_batch_size": ("TrainingArguments", "per_device_train_batch_size"),
        "gradient_accumulation_steps": ("TrainingArguments", "gradient_accumulation_steps"),
        "weight_decay": ("TrainingArguments", "weight_decay"),
        "dataloader_num_workers": ("TrainingArguments", "dataloader_num_workers"),
        "gradient_checkpointing": ("SFTConfig", "gradient_checkpointing"),
        "packing": ("SFTConfig", "packing"), "padding_free": ("SFTConfig", "padding_free")}),
    ({"use_peft": True}, "trl", "sft", TRL_MODEL),
    ({"num_iterations": 1}, "trl", "grpo", {
        "num_generations": ("GRPOConfig", "num_generations"), "loss.beta": ("GRPOConfig", "beta"),
        "max_completion_length": ("GRPOConfig", "max_completion_length"), "vllm_mode": ("GRPOConfig", "vllm_mode"),
        "vllm_gpu_memory_utilization": ("GRPOConfig", "vllm_gpu_memory_utilization"),
        "loss.loss_type.0": ("GRPOConfig", "loss_type"), "learning_rate": ("GRPOConfig", "learning_rate")}),
    ({"rpo_alpha": None, "beta": 0.1}, "trl", "dpo", {
        "loss.loss_type": ("DPOConfig", "loss_type"), "loss.label_smoothing": ("DPOConfig", "label_smoothing"),
        "learning_rate": ("DPOConfig", "learning_rate")}),
    ({"desirable_weight": 1.0}, "trl", "kto", {
        "loss.beta": ("KTOConfig", "beta"), "loss.undesirable_weight": ("KTOConfig", "undesirable_weight"),
        "loss.loss_type.0": ("KTOConfig", "loss_type"), "learning_rate": ("KTOConfig", "learning_rate")}),
    ({"learning_rate": 1e-5, "base_model": "m", "adapter": "lora", "lora_r": 8, "lora_alpha": 16}, "axolotl", "sft", {
        "max_length": ("AxolotlInputConfig", "sequence_len"), "peft.dropout": ("AxolotlInputConfig", "lora_dropout"),
        "micro_batch_size": ("AxolotlInputConfig", "micro_batch_size"),
        "gradient_accumulation_steps": ("AxolotlInputConfig", "gradient_accumulation_steps"),
        "optimizer": ("AxolotlInputConfig", "optimizer"), "weight_decay": ("AxolotlInputConfig", "weight_decay"),
        "gradient_checkpointing": ("AxolotlInputConfig", "gradient_checkpointing")}),
    ({"model_name_or_path": "m", "stage": "sft"}, "llama-factory", "sft", {
        "max_length": ("DataArguments", "cutoff_len"), "peft.r": ("FinetuningArguments", "lora_rank"),
        "peft.dropout": ("FinetuningArguments", "lora_dropout")}),
    ({"model_name_or_path": "m", "stage": "dpo"}, "llama-factory", "dpo", {
        "loss.beta": ("FinetuningArguments", "pref_beta"), "loss.loss_type.0": ("FinetuningArguments", "pref_loss")}),
]
PACKAGE = {"trl": "trl", "axolotl": "axolotl", "llama-factory": "llamafactory"}


def _attribute(facts, dotted: str):
    value = facts
    for part in dotted.split("."):
        value = value[int(part)] if part.isdigit() else getattr(value, part)
    return value


@pytest.mark.parametrize(("config", "framework", "task", "fields"), DEFAULTS,
                         ids=[f"{d[1]}-{d[2]}-{i}" for i, d in enumerate(DEFAULTS)])
def test_trainer_facts_of_a_bare_config_are_the_recorded_defaults(tmp_path, config, framework, task, fields):
    facts = _facts(tmp_path, config, framework)
    assert facts.task == task
    for attribute, (cls, key) in fields.items():
        package = "transformers" if cls == "TrainingArguments" else PACKAGE[framework]
        expected = recorded_default(package, cls, key)
        if isinstance(expected, list) and attribute.startswith("loss.loss_type"):
            expected = tuple(expected)
        if expected is None and attribute == "gradient_checkpointing":
            continue
        assert _attribute(facts, attribute) == expected, (attribute, cls, key)


def test_every_key_mldebug_names_as_replaced_was_dropped_when_its_replacement_existed():
    for package, cls, table in (("transformers", "TrainingArguments", hf.HF_REPLACED_BY),
                                ("trl", "SFTConfig", trl.REPLACED_BY)):
        for old, new in table.items():
            classes = [c for c in ([cls] if package == "transformers" else list(trl.CONFIG_CLASSES) + ["ModelConfig"])
                       if old in record.histories(package, c)]
            assert classes, (package, old)
            first, gone = record.span(package, classes[0], old, record.releases(package)[0])
            assert gone is not None, f"{old} is still in {package}"
            replacement = new.split()[0]
            assert replacement in record.fields(package, classes[0], gone), (old, replacement, gone)


def test_trl_detection_keys_are_trl_config_fields_in_some_recorded_release():
    fields = {k for c in (*trl.CONFIG_CLASSES, "GRPOScriptArguments") for k in record.histories("trl", c)}
    assert set(trl.FRAMEWORK.detection.keys) <= fields


def test_axolotl_dataset_classes_per_rl_type_are_members_of_its_datasets_union():
    union = record.behaviour("axolotl", "datasets_union", EMULATED["axolotl"])
    assert {c for classes in axolotl.RL_DATASETS.values() for c in classes} | {axolotl.SFT_DATASET} <= set(union)
    assert axolotl.dataset_classes("grpo", EMULATED["axolotl"]) == tuple(union)  # SyntheticDataset included
    assert axolotl.dataset_classes("dpo", EMULATED["axolotl"]) == ("DPODataset",)
    assert axolotl.dataset_classes(None, "0.5.2") == ("SFTDataset",)


def test_warmup_boundaries_in_the_cf003_text_are_the_recorded_ones():
    text = hf.version_dependent()["warmup_ratio"][1]
    assert "before 5.0" in text and "5.0-5.14 copy it" in text and "5.15 and later reject it" in text
    assert "from transformers 5.0" in hf.version_dependent()["warmup_steps"][1]
    assert versions.NEWEST_CHECKED_TRANSFORMERS in record.releases("transformers")


@pytest.mark.parametrize("missing", ["lora_r", "lora_alpha"])
def test_an_axolotl_lora_adapter_without_lora_r_or_lora_alpha_is_refused_as_peft_refuses_it(tmp_path, missing):
    """Was: r 8 and alpha 16 assumed (peft's own defaults). axolotl's schema has no default for either (the record:
    ``None``) and hands None to LoraConfig; real peft then fails while it wraps the model."""
    from mldebug_cli.core.errors import InputError

    assert record.default("axolotl", "AxolotlInputConfig", missing, "0.19.0") == "None"
    config = {"learning_rate": 1e-5, "base_model": "m", "adapter": "lora", "lora_r": 16, "lora_alpha": 32}
    del config[missing]
    with pytest.raises(InputError, match=f"{missing} is not set: axolotl has no default"):
        _facts(tmp_path, config, "axolotl")
    peft = pytest.importorskip("peft")
    transformers = pytest.importorskip("transformers")
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2))
    settings = {"r": 16, "lora_alpha": 32, missing.replace("lora_r", "r"): None}
    with pytest.raises(TypeError):
        peft.get_peft_model(model, peft.LoraConfig(target_modules=["q_proj"], lora_dropout=0.0, bias="none",
                                                   task_type="CAUSAL_LM", **settings))


# --- the claims the record corrected: CF001 at the target release (was: one stored release standing in for all)

def _review(tmp_path, framework: str, config: dict, **flags):
    from mldebug_cli.frameworks import registry
    from mldebug_cli.sources.config_file import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    loaded = load_config(path)
    targets = versions.resolve(str(path), flags)
    return registry.framework(framework).key_schema(loaded, targets, None), loaded, targets


def test_a_transformers_4_46_1_target_reads_its_own_fields_not_4_57s(tmp_path):
    """average_tokens_across_devices came in 4.46.2/4.46.3 (the record: absent from 4.46.1's wheel)."""
    keys, _, _ = _review(tmp_path, "transformers", {"average_tokens_across_devices": True}, transformers="4.46.1")
    assert "average_tokens_across_devices" not in keys.keys and "transformers 4.46.1 (recorded" in keys.source
    assert keys.renamed["average_tokens_across_devices"].startswith("added to TrainingArguments in transformers 4.46.3")
    newer, _, _ = _review(tmp_path, "transformers", {}, transformers="4.46.3")
    assert "average_tokens_across_devices" in newer.keys


def test_removed_transformers_and_trl_keys_say_when_and_what_replaced_them(tmp_path):
    keys, _, _ = _review(tmp_path, "transformers", {}, transformers="5.6.0")
    assert keys.renamed["evaluation_strategy"] == ("removed from TrainingArguments in transformers 4.51: use "
                                                   "eval_strategy")
    assert keys.renamed["no_cuda"] == "removed from TrainingArguments in transformers 5.0: use use_cpu"
    assert "warmup_ratio" in keys.keys  # 5.6 still has it (deprecated)
    trl_keys, _, _ = _review(tmp_path, "trl", {"max_length": 512}, trl="1.16.0", transformers="5.6.0")
    assert trl_keys.renamed["max_seq_length"] == "removed from SFTConfig in TRL 0.20: use max_length"
    old_trl, _, _ = _review(tmp_path, "trl", {"max_seq_length": 512}, trl="0.19.1", transformers="4.57.6")
    assert "max_seq_length" in old_trl.keys and "max_length" in old_trl.keys  # both from 0.16 to 0.19


def test_evaluation_strategy_sets_the_eval_strategy_up_to_transformers_4_50(tmp_path):
    """transformers <= 4.50 has evaluation_strategy and __post_init__ copies it over eval_strategy (the record's
    evaluation_strategy_alias); mldebug read eval_strategy only, so a reduce_lr_on_plateau run looked unevaluated."""
    from mldebug_cli.frameworks import read_spec
    from mldebug_cli.sources.config_file import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"evaluation_strategy": "steps", "learning_rate": 1e-5}), encoding="utf-8")
    loaded = load_config(path)
    old = read_spec(loaded, "transformers", 1, versions.resolve(str(path), {"transformers": "4.50.3"}))
    assert old.eval_strategy == "steps" and old.keys["eval_strategy"] == "evaluation_strategy"
    new = read_spec(loaded, "transformers", 1, versions.resolve(str(path), {"transformers": "4.51.0"}))
    assert new.eval_strategy == "no"


def test_llama_factory_fields_that_are_not_init_arguments_are_not_keys(tmp_path):
    """ModelArguments' compute_dtype, device_map, model_max_length and block_diag_attn are field(init=False):
    HfArgumentParser skips them, so a config setting one is refused. The old stored 0.9.5 list had them."""
    keys, _, _ = _review(tmp_path, "llama-factory", {"model_name_or_path": "m"}, llamafactory="0.9.5",
                         transformers="4.57.6")
    assert not {"compute_dtype", "device_map", "model_max_length", "block_diag_attn"} & set(keys.keys)
    assert keys.keys["flash_attn"].choices == ("auto", "disabled", "sdpa", "fa2", "fa3")  # AttentionFunction


def test_an_axolotl_target_reads_that_release_schema(tmp_path):
    keys, _, _ = _review(tmp_path, "axolotl", {"base_model": "m"}, axolotl="0.12.2")
    assert keys.source == "axolotl 0.12.2 (recorded from its wheel)"
    assert "dpo_loss_type" not in keys.keys and "unsloth_lora_mlp" in keys.keys
    assert keys.renamed["dpo_loss_type"].startswith("added to AxolotlInputConfig in axolotl 0.")
    newest, _, _ = _review(tmp_path, "axolotl", {"base_model": "m"}, axolotl="0.19.0")
    assert "unsloth_lora_mlp" not in newest.keys
    assert newest.renamed["unsloth_lora_mlp"].startswith("removed from AxolotlInputConfig in axolotl 0.")
    oldest, _, _ = _review(tmp_path, "axolotl", {"base_model": "m", "rl": "grpo"}, axolotl="0.5.2")
    assert oldest.source == "axolotl 0.5.2 (recorded from its wheel)"


def test_axolotl_grpo_dataset_entries_may_use_synthetic_dataset_keys(tmp_path):
    """0.16 added SyntheticDataset to the datasets union; mldebug's stored list lacked it, so its keys were CF001."""
    synthetic = set(record.fields("axolotl", "SyntheticDataset", "0.19.0")) - set(
        record.fields("axolotl", "SFTDataset", "0.19.0"))
    assert synthetic
    keys, _, _ = _review(tmp_path, "axolotl", {"base_model": "m", "rl": "grpo"}, axolotl="0.19.0")
    assert synthetic <= set(keys.nested["datasets"].keys)


def test_save_strategy_best_is_a_choice_from_transformers_4_47():
    """The stored 4.57.6 list stood in for every 4.x target, so save_strategy: best passed CF002 under 4.46."""
    assert schema.recorded_keys("transformers", ("TrainingArguments",), "4.46.3")["save_strategy"].choices == ("no", "steps", "epoch")
    assert "best" in schema.recorded_keys("transformers", ("TrainingArguments",), "4.47.0")["save_strategy"].choices
    assert schema.recorded_keys("transformers", ("TrainingArguments",), "5.24.0")["eval_strategy"].choices == ("no", "steps", "epoch")
