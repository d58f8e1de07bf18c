"""Trainer facts: what a config makes the trainer do. TRL's are compared with TRL 1.16's own config classes parsed
from the same file; axolotl's and LLaMA-Factory's with the defaults of their 0.19.0 / 0.9.5 schemas."""

from __future__ import annotations

import pytest
import yaml

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.trainer_facts import read_trainer_facts
from support import FIXTURES

CONFIGS = FIXTURES / "configs"


def _trl_args(path, cls_name: str, tmp_path):
    """The config parsed by TRL's own dataclass, as `trl sft|dpo|grpo --config` builds it."""
    trl = pytest.importorskip("trl")
    data = yaml.safe_load(path.read_text())
    cls = getattr(trl, cls_name)
    import dataclasses

    fields = {f.name for f in dataclasses.fields(cls)}
    kept = {k: v for k, v in data.items() if k in fields}
    return cls(**{**kept, "output_dir": str(tmp_path), "use_cpu": True})


@pytest.mark.parametrize(("config", "cls"), [
    (CONFIGS / "preference" / "trl_dpo.yaml", "DPOConfig"),
    (CONFIGS / "preference" / "trl_grpo.yaml", "GRPOConfig"),
    (CONFIGS / "preference" / "trl_kto_pairs.yaml", "KTOConfig"),
])
def test_trl_facts_are_what_trls_config_classes_hold(config, cls, tmp_path):
    args = _trl_args(config, cls, tmp_path)
    facts = read_trainer_facts(config, "trl")
    assert facts.task == cls[:-6].lower()
    assert facts.micro_batch_size == args.per_device_train_batch_size
    assert facts.gradient_accumulation_steps == args.gradient_accumulation_steps
    assert facts.gradient_checkpointing == args.gradient_checkpointing
    assert facts.dtype == ("bf16" if args.bf16 else "fp16" if args.fp16 else "fp32")
    assert facts.optimizer == str(args.optim.value if hasattr(args.optim, "value") else args.optim)
    assert facts.learning_rate == pytest.approx(args.learning_rate)
    assert facts.loss.beta == pytest.approx(args.beta)
    if cls == "GRPOConfig":
        assert facts.num_generations == args.num_generations
        assert facts.max_completion_length == args.max_completion_length
        assert facts.use_vllm == args.use_vllm
        assert facts.reference_model == ("none" if args.beta == 0 else "copy")
    else:
        assert facts.max_length == args.max_length
    if cls == "DPOConfig":
        assert facts.loss.loss_type == tuple(args.loss_type)
        assert facts.reference_model == "copy"


def test_an_sft_config_gets_sftconfigs_defaults(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\nmax_length: 2048\nuse_peft: true\nlora_r: 8\n")
    args = _trl_args(config, "SFTConfig", tmp_path)
    facts = read_trainer_facts(config, "trl")
    assert (facts.task, facts.max_length, facts.gradient_checkpointing) == ("sft", args.max_length, args.gradient_checkpointing)
    assert facts.learning_rate == pytest.approx(args.learning_rate)
    assert facts.model_dtype == "fp32"  # TRL loads a model named by path in float32 unless model_init_kwargs say
    assert facts.peft.r == 8 and facts.peft.alpha == 32 and facts.peft.dropout == 0.05
    assert facts.loss.terms[0].name == "nll"


def test_axolotl_facts_use_its_schema_defaults():
    facts = read_trainer_facts(CONFIGS / "axolotl_llama3_lora_1b.yml", "axolotl")
    assert (facts.micro_batch_size, facts.gradient_accumulation_steps, facts.max_length) == (2, 2, 2048)
    assert facts.packing and facts.pad_to_max_length and facts.gradient_checkpointing and facts.dtype == "bf16"
    assert facts.gradient_checkpointing_kwargs == {"use_reentrant": True}  # axolotl's normalize_config
    assert facts.peft.target_modules == "all-linear" and facts.peft.r == 16
    assert facts.keys["micro_batch_size"] == "micro_batch_size"
    dpo = read_trainer_facts(CONFIGS / "preference" / "axolotl_dpo.yml", "axolotl")
    assert dpo.task == "dpo" and dpo.loss.beta == 0.1 and dpo.reference_model == "copy"


def test_llama_factory_facts_use_its_hparams_defaults():
    facts = read_trainer_facts(CONFIGS / "llama_factory_llama3_lora_sft.yaml", "llama-factory")
    assert facts.peft.r == 8 and facts.peft.alpha == 16 and facts.peft.target_modules == "all-linear"
    assert facts.gradient_checkpointing and facts.gradient_checkpointing_kwargs == {"use_reentrant": True}
    assert (facts.max_length, facts.dataset_num_proc, facts.dtype) == (2048, 8, "bf16")
    dpo = read_trainer_facts(CONFIGS / "preference" / "llama_factory_dpo.yaml", "llama-factory")
    assert dpo.task == "dpo" and dpo.reference_model == "adapter-disabled" and dpo.loss.beta == 0.1


def test_a_deepspeed_file_beside_the_config_is_read(tmp_path):
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}')
    config = tmp_path / "sft.yaml"
    config.write_text("model_name_or_path: x\nmax_length: 512\ndeepspeed: ds.json\n")
    ds = read_trainer_facts(config, "trl").deepspeed
    assert (ds.zero_stage, ds.offload_optimizer, ds.offload_param) == (3, True, False)
    config.write_text("model_name_or_path: x\nmax_length: 512\ndeepspeed: missing.json\n")
    with pytest.raises(InputError, match="deepspeed: cannot read missing.json"):
        read_trainer_facts(config, "trl")


def test_axolotls_sequence_len_defaults_to_512(tmp_path):
    """axolotl 0.19.0's schema (utils/schemas/config.py): ``sequence_len: int = Field(default=512)``."""
    config = tmp_path / "axolotl.yml"
    config.write_text("base_model: x\nmicro_batch_size: 1\nnum_epochs: 1\ndatasets: []\n")
    facts = read_trainer_facts(config, "axolotl")
    assert facts.max_length == 512 and not facts.pad_to_max_length and facts.micro_batch_size == 1


@pytest.mark.parametrize("extra", ["", "scale_rewards: false\ntemperature: 0.7\nepsilon_high: 0.28\n",
                                   "scale_rewards: batch\nloss_type: dr_grpo\nimportance_sampling_level: sequence\n"])
def test_grpo_policy_facts_are_what_grpoconfig_holds(tmp_path, extra):
    config = tmp_path / "grpo.yaml"
    config.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\nnum_generations: 4\nper_device_train_batch_size: 8\n"
                      "beta: 0.04\n" + extra)
    args = _trl_args(config, "GRPOConfig", tmp_path)
    facts = read_trainer_facts(config, "trl")
    policy = facts.loss.policy
    assert (policy.scale_rewards, policy.temperature, policy.epsilon, policy.epsilon_high) == (
        args.scale_rewards, args.temperature, args.epsilon, args.epsilon_high)
    assert policy.importance_sampling_level == args.importance_sampling_level
    assert facts.loss.loss_type == (args.loss_type,)


@pytest.mark.parametrize("targets", [["qkv_proj"], ["q_proj", "v_proj"], "q_proj", "all-linear", ["all-linear"],
                                     ".*\\.(q|v)_proj", ["o_proj", "down_proj", "gate_proj"]])
def test_trl_lora_target_modules_are_what_trls_model_config_hands_peft(targets, tmp_path):
    """TRL's ModelConfig turns a one-item list into its item (a string: peft's regular expression over the full
    module name), the way `trl dpo --config` builds its LoraConfig with get_peft_config."""
    trl = pytest.importorskip("trl")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"model_name_or_path": "m", "output_dir": str(tmp_path), "use_cpu": True, "use_peft": True,
                                      "lora_target_modules": targets, "beta": 0.1}))
    _, _, model_args = trl.TrlParser((trl.ScriptArguments, trl.DPOConfig, trl.ModelConfig)).parse_yaml_file(str(config))
    peft_config = trl.get_peft_config(model_args)
    expected = peft_config.target_modules
    mine = read_trainer_facts(config, "trl").peft.target_modules
    assert (mine if isinstance(mine, str) else set(mine)) == (expected if isinstance(expected, str) else set(expected))
