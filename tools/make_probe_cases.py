"""Planted cases for `mldebug probe` (GP001-GP009): tiny random models, configs and rows, some trained by TRL.

    python tools/make_probe_cases.py OUT_DIR [--case NAME ...] [--probe]

Each case is a folder under OUT_DIR with ``config.yaml`` (a TRL recipe), ``model/`` (a Qwen2 architecture with
the vocabulary of fixtures/tokenizers/qwen2.5-instruct, 2 layers, hidden size 32, random weights saved with
save_pretrained), its rows, and ``case.json``: the probe's arguments and the findings it must give (an empty list:
a healthy run that must stay quiet). ``versions.json`` records the libraries that made them. The trained cases run
the real TRL 1.16 DPOTrainer, KTOTrainer and GRPOTrainer on CPU (GRPO's rollouts are the rewards file's
completions, through its ``rollout_func``):

    case                 planted                                                          expected
    sft-healthy          LoRA SFT, gradient checkpointing (non-reentrant)                quiet
    sft-reentrant        the same under transformers 4.46 (requirements.txt): reentrant   GP002
                         checkpointing, get_peft_model, nobody enables input grads
    sft-trl-cli-reentrant a `trl sft --config` file, LoRA, reentrant checkpointing       quiet
    lf-lora-dpo          LLaMA-Factory's qwen3_lora_dpo.yaml on a tiny Llama 3.1 model     quiet
    sft-new-tokens       <tool_call> rows zeroed (untrained), LoRA without modules_to_save GP003
    sft-new-tokens-saved the same with lora_modules_to_save [embed_tokens, lm_head]        quiet
    sft-lr-tiny          learning_rate 1e-10                                              GP007
    sft-fp16-overflow    layer 1's MLP scaled by 3e3, fp16: true                          GP008
    sft-bf16-scaled      the same scaled model in bf16 (fp32's range: nothing overflows)  quiet
    dpo-healthy          DPO sigmoid + sft, --steps 2 --ablate sigmoid                    quiet
    orpo-healthy         ORPO on the plain pairs (orpo-conflict's twin)                   quiet
    orpo-conflict        ORPO, the rejected answer is the chosen one's opening alone:    GP004
                         the odds ratio pushes the shared tokens down, the NLL up
    dpo-sft-tiny         loss_weights [1, 1e-4], --steps 2 --ablate sft                   GP005, GP009
    dpo-saturated        DPOTrainer (beta 0.5, lr 1e-2, 6 steps) until margins saturate   GP001, GP007 (that LR
                                                                                          rewrites the weights)
    dpo-opposite-optim   checkpoint of a LoRA DPO run on swapped pairs (its optimizer.pt) GP006
    kto-healthy          KTO at the start of training (policy = reference)               quiet
    kto-saturated        KTOTrainer (beta 5, lr 1e-2, 8 steps) on 4 desirable and 8       GP001, GP007
                         undesirable rows until every row sits far from the KL estimate
    grpo-healthy         GRPO rewards that differ within every prompt's group             quiet
    grpo-equal-rewards   three of four prompts whose completions all got reward 1         GP001
    grpo-kl-conflict     a LoRA GRPOTrainer checkpoint that moved toward its rewarded      GP004
                         completions, probed with beta 0.5: the KL term pulls them back
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
SEED = 0

QUESTIONS = [
    ("What is the capital of France?", "Paris.", "London."),
    ("How many legs does a spider have?", "Eight.", "Six."),
    ("What colour is the sky on a clear day?", "Blue.", "Green."),
    ("What is two plus two?", "Four.", "Five."),
]
TOOL_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


TOKENIZERS = {"qwen2.5-instruct": TOKENIZER, "llama3-instruct": ROOT / "fixtures" / "tokenizers" / "llama3-instruct"}
ARCHITECTURES = {  # model_type -> the config class's extra keys beside the shared tiny shape
    "qwen2": {},
    "llama": {"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 128}},
    "qwen3": {"head_dim": 8},
    "mistral": {"head_dim": 8, "sliding_window": None},
    "gemma2": {"head_dim": 8, "query_pre_attn_scalar": 8, "sliding_window": 16},
    "gemma3_text": {"head_dim": 8, "query_pre_attn_scalar": 8, "sliding_window": 16},
    "phi3": {"pad_token_id": 0},
}


def tiny_model(out: Path, zero_tokens: tuple[str, ...] = (), scale_layer: float | None = None, seed: int = SEED,
               arch: str = "qwen2", tokenizer_name: str = "qwen2.5-instruct") -> Path:
    """A tiny model of ``arch`` (2 layers, hidden size 32) with the fixture tokenizer's vocabulary, random weights
    (seeded), saved with its tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZERS[tokenizer_name])
    config = AutoConfig.for_model(arch, vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                  max_position_embeddings=256, tie_word_embeddings=False, **ARCHITECTURES[arch])
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for text in zero_tokens:  # rows a base model never trained (Llama-3 base's reserved tokens are zeros)
            token = tokenizer.convert_tokens_to_ids(text)
            model.get_input_embeddings().weight[token] = 0
            model.get_output_embeddings().weight[token] = 0
        if scale_layer is not None:
            mlp = model.model.layers[1].mlp
            for linear in (mlp.up_proj, mlp.gate_proj, mlp.down_proj):
                linear.weight.mul_(scale_layer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def sft_rows(tool_calls: bool = False) -> list[dict]:
    rows = []
    for question, answer, _ in QUESTIONS:
        reply = f"{TOOL_CALL}\n{answer}" if tool_calls else answer
        rows.append({"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]})
    return rows


def pair_rows(swapped: bool = False, boilerplate: bool = False) -> list[dict]:
    rows = []
    for question, good, bad in QUESTIONS:
        chosen, rejected = (bad, good) if swapped else (good, bad)
        if boilerplate:  # the rejected answer is the chosen one's opening alone
            rejected = " ".join(["Sure!"] * 8)
            chosen = f"{rejected} {chosen}"
        rows.append({"prompt": [{"role": "user", "content": question}],
                     "chosen": [{"role": "assistant", "content": chosen}],
                     "rejected": [{"role": "assistant", "content": rejected}]})
    return rows


def kto_rows(unsure: bool = False) -> list[dict]:
    """Unpaired KTO rows: each question's right answer desirable, its wrong one (and "I am not sure.") undesirable."""
    rows = []
    for question, good, bad in QUESTIONS:
        for answer, label in ((good, True), (bad, False)) + ((("I am not sure.", False),) if unsure else ()):
            rows.append({"prompt": [{"role": "user", "content": question}],
                         "completion": [{"role": "assistant", "content": answer}], "label": label})
    return rows


END = "<|im_end|>"  # where the fixture template's assistant turns end: a completion that stopped there


def reward_groups(equal: int = 0) -> list[dict]:
    """GRPO rollouts, four per question: two right answers (reward 1), two wrong (0); the first ``equal`` questions'
    completions all right (one reward for the whole group: zero advantage)."""
    groups = []
    for index, (question, good, bad) in enumerate(QUESTIONS):
        texts = [good, f"The answer: {good}", bad, "I am not sure."]
        rewards = [1.0, 1.0, 0.0, 0.0]
        if index < equal:
            texts, rewards = [good, f"The answer: {good}", f"{good} Sure.", f"It is {good}"], [1.0] * 4
        groups.append({"prompt": [{"role": "user", "content": question}],
                       "completions": [t + END for t in texts], "rewards": rewards})
    return groups


def write_case(folder: Path, config: dict, rows: list[dict], expected: list[str], args: dict | None = None,
               model: str = "model") -> None:
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.json").write_text(json.dumps(rows, indent=1))
    config = {"model_name_or_path": model, "dataset_name": "rows.json", "output_dir": "out", "report_to": "none",
              "max_length": 48, "per_device_train_batch_size": 4, **config}
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "case.json").write_text(json.dumps({"expected": expected, "args": args or {}, "model": model}, indent=1))


LORA = {"use_peft": True, "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "lora_target_modules": ["q_proj", "v_proj"]}
SFT = {"learning_rate": 2.0e-4, "assistant_only_loss": False, **LORA}
DPO = {"beta": 0.1, "loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 0.5], "learning_rate": 1.0e-4}


def sft_healthy(folder: Path, base: Path) -> None:
    write_case(folder, {**SFT, "gradient_checkpointing": True}, sft_rows(), [], model="../base-model")


def sft_reentrant(folder: Path, base: Path) -> None:
    write_case(folder, {k: v for k, v in SFT.items() if k != "assistant_only_loss"} | {"gradient_checkpointing": True},
               sft_rows(), ["GP002"], args={"framework": "transformers"}, model="../base-model")
    (folder / "requirements.txt").write_text("transformers==4.46.3\n")  # a bare Trainer loop on transformers 4.x


def sft_trl_cli_reentrant(folder: Path, base: Path) -> None:
    """A `trl sft --config` file (ScriptArguments + SFTConfig + ModelConfig keys) with reentrant checkpointing: TRL
    1.16 and transformers 5 enable input grads, every lora_B gets a gradient (issue 33's first false alarm)."""
    write_case(folder, {"learning_rate": 2.0e-4, **LORA, "gradient_checkpointing": True,
                        "gradient_checkpointing_kwargs": {"use_reentrant": True}}, sft_rows(), [], model="../base-model")


LLAMA_FACTORY_DPO = {  # the keys of LLaMA-Factory's examples/train_lora/qwen3_lora_dpo.yaml, but model, data, template
    "trust_remote_code": True, "stage": "dpo", "do_train": True, "finetuning_type": "lora", "lora_rank": 8,
    "lora_target": "all", "pref_beta": 0.1, "pref_loss": "sigmoid", "dataset": "pairs", "dataset_dir": "data",
    "template": "llama3", "cutoff_len": 2048, "max_samples": 1000, "preprocessing_num_workers": 16,
    "dataloader_num_workers": 4, "output_dir": "saves/tiny/lora/dpo", "logging_steps": 10, "save_steps": 500,
    "plot_loss": True, "overwrite_output_dir": True, "save_only_model": False, "report_to": "none",
    "per_device_train_batch_size": 1, "gradient_accumulation_steps": 8, "learning_rate": 5.0e-6,
    "num_train_epochs": 3.0, "lr_scheduler_type": "cosine", "warmup_ratio": 0.1, "bf16": True,
    "ddp_timeout": 180000000, "resume_from_checkpoint": None,
}


def lf_lora_dpo(folder: Path, base: Path) -> None:
    """LLaMA-Factory's LoRA DPO example (all linear layers, reentrant checkpointing by default) on a tiny Llama 3.1
    model and 4 sharegpt ranking rows (issue 33's second false alarm)."""
    import yaml

    tiny_model(folder / "model", arch="llama", tokenizer_name="llama3-instruct")
    rows = [{"conversations": [{"from": "human", "value": q}], "chosen": {"from": "gpt", "value": good},
             "rejected": {"from": "gpt", "value": bad}} for q, good, bad in QUESTIONS]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "data" / "pairs.json").write_text(json.dumps(rows, indent=1))
    (folder / "data" / "dataset_info.json").write_text(json.dumps({"pairs": {
        "file_name": "pairs.json", "ranking": True, "formatting": "sharegpt",
        "columns": {"messages": "conversations", "chosen": "chosen", "rejected": "rejected"}}}, indent=1))
    (folder / "config.yaml").write_text(yaml.safe_dump({"model_name_or_path": "model", **LLAMA_FACTORY_DPO},
                                                       sort_keys=False))
    (folder / "case.json").write_text(json.dumps({"expected": [], "args": {}, "model": "model"}, indent=1))


def sft_new_tokens(folder: Path, base: Path) -> None:
    tiny_model(folder / "model", zero_tokens=("<tool_call>", "</tool_call>"))
    write_case(folder, SFT, sft_rows(tool_calls=True), ["GP003"])


def sft_new_tokens_saved(folder: Path, base: Path) -> None:
    tiny_model(folder / "model", zero_tokens=("<tool_call>", "</tool_call>"))
    write_case(folder, {**SFT, "lora_modules_to_save": ["embed_tokens", "lm_head"]}, sft_rows(tool_calls=True), [])


def sft_lr_tiny(folder: Path, base: Path) -> None:
    write_case(folder, {**SFT, "learning_rate": 1.0e-10}, sft_rows(), ["GP007"], model="../base-model")


def sft_fp16_overflow(folder: Path, base: Path) -> None:
    tiny_model(folder / "model", scale_layer=3e3)
    write_case(folder, {**SFT, "fp16": True}, sft_rows(), ["GP008"])


def sft_bf16_scaled(folder: Path, base: Path) -> None:
    """sft-fp16-overflow's twin: the same scaled layer in bf16, whose exponent range is fp32's."""
    tiny_model(folder / "model", scale_layer=3e3)
    write_case(folder, {**SFT, "bf16": True}, sft_rows(), [])


def orpo_healthy(folder: Path, base: Path) -> None:
    config = {"beta": 1.0, "max_length": 96, "max_completion_length": 48, "learning_rate": 1.0e-4}
    write_case(folder, config, pair_rows(), [], model="../base-model")


def dpo_healthy(folder: Path, base: Path) -> None:
    write_case(folder, DPO, pair_rows(), [], {"steps": 2, "ablate": "sigmoid"}, model="../base-model")


def orpo_conflict(folder: Path, base: Path) -> None:
    """ORPO on token-averaged log-probs: the odds-ratio term pushes the shared boilerplate down, the NLL up."""
    config = {"beta": 1.0, "max_length": 96, "max_completion_length": 48, "learning_rate": 1.0e-4}
    write_case(folder, config, pair_rows(boilerplate=True), ["GP004"], model="../base-model")


def dpo_sft_tiny(folder: Path, base: Path) -> None:
    write_case(folder, {**DPO, "loss_weights": [1.0, 1.0e-4]}, pair_rows(), ["GP005", "GP009"],
               {"steps": 2, "ablate": "sft"}, model="../base-model")


def dpo_saturated(folder: Path, base: Path) -> None:
    """Full fine-tuning with TRL's DPOTrainer at a high LR until every pair's margin is far past 1/β."""
    config = {"beta": 0.5, "loss_type": ["sigmoid"], "learning_rate": 1.0e-2}
    write_case(folder, config, pair_rows(), ["GP001", "GP007"], {"checkpoint": "trained"}, model="../base-model")
    _train_dpo(folder, base, pair_rows(), config, steps=6, out=folder / "trained", peft=False)


def dpo_opposite_optim(folder: Path, base: Path) -> None:
    """A LoRA DPO checkpoint trained on the swapped pairs: its Adam moments point the opposite way."""
    config = {"beta": 0.1, "loss_type": ["sigmoid"], "learning_rate": 1.0e-3, **LORA}
    write_case(folder, config, pair_rows(), ["GP006"], {"checkpoint": "trained"}, model="../base-model")
    _train_dpo(folder, base, pair_rows(swapped=True), config, steps=4, out=folder / "trained", peft=True)


KTO = {"beta": 0.1, "learning_rate": 1.0e-4, "max_length": 48, "desirable_weight": 1.0, "undesirable_weight": 1.0}


def kto_healthy(folder: Path, base: Path) -> None:
    write_case(folder, KTO, kto_rows(), [], model="../base-model")


def kto_saturated(folder: Path, base: Path) -> None:
    """Full fine-tuning with TRL's KTOTrainer at a high LR and β until every row sits far from the KL estimate."""
    config = {**KTO, "beta": 5.0, "learning_rate": 1.0e-2}
    write_case(folder, config, kto_rows(unsure=True), ["GP001", "GP007"], {"checkpoint": "trained", "sample": 12},
               model="../base-model")
    train_kto(base, kto_rows(unsure=True), config, steps=8, out=folder / "trained", work=folder / "run")


def train_kto(base: Path, rows: list[dict], config: dict, steps: int, out: Path, work: Path, policy: Path | None = None):
    """KTOTrainer (TRL 1.16) on CPU, full fine-tuning of ``policy`` (default: ``base``) against ``base`` as the
    reference; returns the trainer."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import KTOConfig, KTOTrainer

    torch.manual_seed(SEED)
    args = KTOConfig(output_dir=str(work), max_steps=steps, learning_rate=config["learning_rate"], beta=config["beta"],
                     per_device_train_batch_size=4, max_length=config["max_length"], lr_scheduler_type="constant",
                     logging_steps=max(steps, 1), save_strategy="no", report_to="none", use_cpu=True, seed=SEED,
                     dataloader_num_workers=0, disable_tqdm=True, bf16=False, loss_type=config.get("loss_type", "kto"),
                     desirable_weight=config.get("desirable_weight", 1.0),
                     undesirable_weight=config.get("undesirable_weight", 1.0))
    trainer = KTOTrainer(model=AutoModelForCausalLM.from_pretrained(policy or base),
                         ref_model=AutoModelForCausalLM.from_pretrained(base), args=args,
                         train_dataset=Dataset.from_list(rows), processing_class=AutoTokenizer.from_pretrained(base))
    if steps:
        trainer.train()
        trainer.save_model(str(out))
    return trainer


GRPO = {"num_generations": 4, "per_device_train_batch_size": 16, "max_completion_length": 16, "loss_type": "dapo",
        "learning_rate": 1.0e-4, "beta": 0.0}


def grpo_healthy(folder: Path, base: Path) -> None:
    _grpo_case(folder, GRPO, reward_groups(), [])


def grpo_equal_rewards(folder: Path, base: Path) -> None:
    _grpo_case(folder, GRPO, reward_groups(equal=3), ["GP001"])


def grpo_kl_conflict(folder: Path, base: Path) -> None:
    """A LoRA GRPO checkpoint that moved toward its rewarded completions, probed with a large KL β: the KL term
    pulls the same log-probs back that the policy term pushes."""
    config = {**GRPO, **LORA, "beta": 0.5}
    _grpo_case(folder, config, reward_groups(), ["GP004"], {"checkpoint": "trained"})
    train_grpo(base, reward_groups(), {**config, "beta": 0.0, "learning_rate": 5.0e-3}, steps=4, out=folder / "trained", work=folder / "run")


def _grpo_case(folder: Path, config: dict, groups: list[dict], expected: list[str], args: dict | None = None) -> None:
    write_case(folder, {k: v for k, v in config.items() if k != "max_length"}, [{"prompt": g["prompt"]} for g in groups],
               expected, {"rewards": "rewards.jsonl", **(args or {})}, model="../base-model")
    (folder / "rewards.jsonl").write_text("".join(json.dumps(g) + "\n" for g in groups))


def train_grpo(base: Path, groups: list[dict], config: dict, steps: int, out: Path, work: Path, adapter: Path | None = None):
    """GRPOTrainer (TRL 1.16) on CPU whose rollouts are the rewards file's completions (its ``rollout_func``) and
    whose reward is the file's; LoRA when the config asks. Trains ``steps`` steps, saves the adapter to ``out``
    and returns the trainer."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig, PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(base)
    by_prompt = {g["prompt"][-1]["content"]: g for g in groups}
    rewards = {}
    for g in groups:
        for text, reward in zip(g["completions"], g["rewards"]):
            rewards[(g["prompt"][-1]["content"], tuple(tokenizer(text, add_special_tokens=False)["input_ids"]))] = reward

    def rollout(prompts, trainer):  # each prompt comes num_generations times in a row: its k-th completion
        seen: dict[str, int] = {}
        prompt_ids, completion_ids = [], []
        for prompt in prompts:
            key = prompt[-1]["content"]
            k = seen[key] = seen.get(key, -1) + 1
            prompt_ids.append(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True,
                                                            return_dict=True)["input_ids"])
            ids = tokenizer(by_prompt[key]["completions"][k % len(by_prompt[key]["completions"])],
                            add_special_tokens=False)["input_ids"][: config["max_completion_length"]]
            completion_ids.append(ids)
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids,
                "logprobs": [[0.0] * len(ids) for ids in completion_ids]}

    def reward(prompts, completions, completion_ids, **kwargs):
        return [rewards.get((p[-1]["content"], tuple(ids))) for p, ids in zip(prompts, completion_ids)]

    torch.manual_seed(SEED)
    args = GRPOConfig(output_dir=str(work), max_steps=max(steps, 1), learning_rate=config["learning_rate"],
                      beta=config["beta"], num_generations=config["num_generations"],
                      per_device_train_batch_size=config["per_device_train_batch_size"],
                      max_completion_length=config["max_completion_length"], loss_type=config["loss_type"],
                      scale_rewards=config.get("scale_rewards", "group"), temperature=config.get("temperature", 1.0),
                      lr_scheduler_type="constant", logging_steps=max(steps, 1), save_strategy="no", report_to="none",
                      use_cpu=True, seed=SEED, dataloader_num_workers=0, disable_tqdm=True, bf16=False)
    model = AutoModelForCausalLM.from_pretrained(base)
    lora = None
    if adapter is not None:
        model = PeftModel.from_pretrained(model, adapter, is_trainable=True)
    elif config.get("use_peft"):
        lora = LoraConfig(r=config["lora_r"], lora_alpha=config["lora_alpha"], lora_dropout=0.0,
                          target_modules=config["lora_target_modules"], task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, peft_config=lora, rollout_func=rollout,
                          train_dataset=Dataset.from_list([{"prompt": g["prompt"]} for g in groups]),
                          processing_class=tokenizer)
    if steps:
        trainer.train()
        trainer.save_model(str(out))
    return trainer


def _train_dpo(folder: Path, base: Path, rows: list[dict], config: dict, steps: int, out: Path, peft: bool) -> None:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    torch.manual_seed(SEED)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    args = DPOConfig(output_dir=str(folder / "run"), max_steps=steps, learning_rate=config["learning_rate"],
                     beta=config["beta"], loss_type=config["loss_type"], per_device_train_batch_size=4,
                     max_length=48, lr_scheduler_type="constant", logging_steps=steps, save_strategy="no",
                     report_to="none", use_cpu=True, seed=SEED, dataloader_num_workers=0, disable_tqdm=True)
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                      task_type="CAUSAL_LM") if peft else None
    trainer = DPOTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         peft_config=lora)
    trainer.train()
    trainer.save_model(str(out))
    trainer.save_state()
    shutil.copy(folder / "run" / "trainer_state.json", out / "trainer_state.json")
    torch.save(trainer.optimizer.state_dict(), out / "optimizer.pt")
    shutil.rmtree(folder / "run", ignore_errors=True)


CASES = {
    "sft-healthy": sft_healthy,
    "sft-reentrant": sft_reentrant,
    "sft-trl-cli-reentrant": sft_trl_cli_reentrant,
    "lf-lora-dpo": lf_lora_dpo,
    "sft-new-tokens": sft_new_tokens,
    "sft-new-tokens-saved": sft_new_tokens_saved,
    "sft-lr-tiny": sft_lr_tiny,
    "sft-fp16-overflow": sft_fp16_overflow,
    "sft-bf16-scaled": sft_bf16_scaled,
    "dpo-healthy": dpo_healthy,
    "orpo-healthy": orpo_healthy,
    "orpo-conflict": orpo_conflict,
    "dpo-sft-tiny": dpo_sft_tiny,
    "dpo-saturated": dpo_saturated,
    "dpo-opposite-optim": dpo_opposite_optim,
    "kto-healthy": kto_healthy,
    "kto-saturated": kto_saturated,
    "grpo-healthy": grpo_healthy,
    "grpo-equal-rewards": grpo_equal_rewards,
    "grpo-kl-conflict": grpo_kl_conflict,
}


def versions() -> dict[str, str]:
    from importlib import metadata

    return {p: metadata.version(p) for p in ("torch", "transformers", "trl", "peft", "datasets")}


def make(out: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Build the named cases (all by default) under ``out``; the base model is shared."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "versions.json").write_text(json.dumps(versions(), indent=1))
    base = out / "base-model"
    if not (base / "config.json").exists():
        tiny_model(base)
    made = {}
    for name in list(CASES) if names is None else names:
        CASES[name](out / name, base.resolve())
        made[name] = out / name
    return made


def probe(folder: Path) -> tuple[list[str], list[str], float, float]:
    """(expected, found) finding codes of `mldebug probe` on one case, with its wall and CPU seconds."""
    import resource
    import time

    sys.path.insert(0, str(ROOT))
    from mldebug_cli.pipelines.probe import ProbeOptions, build_report

    case = json.loads((folder / "case.json").read_text())
    args = dict(case["args"])
    for key in ("checkpoint", "rewards"):
        if key in args:
            args[key] = str(folder / args[key])
    wall, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    report = build_report(ProbeOptions(config=str(folder / "config.yaml"), model=str(folder / case["model"]),
                                       allow_outside_paths=True, **args))
    after = resource.getrusage(resource.RUSAGE_SELF)
    used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    for finding in report.findings:
        print(f"    {finding.code} {finding.message}")
    return case["expected"], sorted({f.code for f in report.findings}), time.monotonic() - wall, used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--case", action="append", choices=list(CASES))
    parser.add_argument("--probe", action="store_true", help="run `mldebug probe` on each case and print what it said")
    args = parser.parse_args(argv)
    failed = 0
    for name, folder in make(args.out, args.case).items():
        print(f"{name}: {folder}")
        if args.probe:
            expected, found, wall, cpu = probe(folder)
            failed += expected != found
            print(f"  expected {expected or 'quiet'}, probe said {found or 'nothing'} ({wall:.1f} s wall, {cpu:.1f} s CPU)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
