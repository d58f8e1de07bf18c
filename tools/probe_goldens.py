"""Differential goldens for `mldebug probe`: the real TRL trainer's loss and per-tensor gradient norms on generated
configs, and the replay of mldebug's probe on the same configs.

    python tools/probe_goldens.py make [--count 300] [--out fixtures/probe-goldens/trl-1.16.0.json.gz]
    python tools/probe_goldens.py make --out FILE --id N [--id M ...]; merge --add FILE [--id N ...]
    python tools/probe_goldens.py replay [--golden ...] [--limit N] [--seed S]

``make`` takes config number ``id`` of the draw "v2", a pure function of (id, "v2") (``draw_case``: a
``random.Random`` seeded with ``probe-goldens/v2/<id>``; no edit of this file or of any loaded module moves it), the
(architecture, task) pair going round with the id: an architecture (tools/make_probe_cases.py's tiny random models:
Llama, Qwen2, Qwen3, Mistral, Gemma 2, Gemma 3, Phi-3), a trainer path (SFT; DPO sigmoid, hinge, ipo, sigmoid+sft
with loss_weights; ORPO; KTO kto and apo_zero_unpaired; GRPO grpo, dapo, dr_grpo, bnpo with beta 0 or 0.04), full
fine-tuning or LoRA/DoRA (weighted 2:5:3), gradient checkpointing off, reentrant or non-reentrant (3:3:4), fp32 or
bf16, a seed, and 2-4 rows (GRPO: prompts) of messy text. The stored "v1" records came from the earlier hypothesis
draw, whose derandomised seed follows the tool's own text: tools/probe_goldens_v1.py keeps that text frozen, and
each record is checked against the draw it names.
Each config is written as a TRL CLI file (ScriptArguments + the trainer's config + ModelConfig keys) and parsed
with TRL's own parser; the trainer is built as ``trl <command> --config`` builds it (the model by path, so the
trainer seeds torch with ``seed`` before loading it and wrapping it with ``get_peft_config``'s LoRA; the reference
model is a copy for full fine-tuning and the policy with its adapter disabled for LoRA), and one batch (all rows,
TRL's own data collator; GRPO: the trainer's own generations with the tiny model, scored by ``reward_of_ids``)
goes through ``compute_loss`` on the model as the accelerator prepares it (bf16: autocast on the forward), then
``backward()``, with gradient checkpointing turned on as ``Trainer.train()`` turns it on (``__init__`` leaves it off:
the records made before session 14 ran without the backward's recompute, which changes no value but hid the 8-bit
DoRA failure of draw q8). Stored per config: the loss, every trainable tensor's gradient norm, the tensors that get no
gradient (GP002's truth: LoRA A while B is 0 is zero by design), whether the values were finite (GP008's truth)
and, for GRPO, the rollouts as a rewards file (each completion's generated token ids and reward). ``replay`` runs
mldebug's probe on each stored config (GRPO: with that rewards file) and counts the disagreements (relative 1e-4,
bf16 included).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "fixtures" / "probe-goldens" / "trl-1.16.0.json.gz"
GOLDEN_QLORA = ROOT / "fixtures" / "probe-goldens" / "trl-1.16.0-qlora.json.gz"  # draws q1, q2, q8: bitsandbytes
RELATIVE = 1e-4
# bf16 is held to the same 1e-4: probe runs TRL's own fused LM head (add_fused_lm_head), whose chunked log-probs sum
# each vocabulary chunk's product in fp32, so both sides round the same operations the same way
ABSOLUTE = 1e-7  # gradient norms below this (a LoRA A at step 0 is exactly 0) compare absolutely
TOKENIZER_OF = {"llama": "llama3-instruct"}  # every other architecture: qwen2.5-instruct
TARGETS = {"phi3": ("all-linear", ["o_proj", "down_proj"], ["qkv_proj"])}
DEFAULT_TARGETS = ("all-linear", ["q_proj", "v_proj"], ["o_proj", "down_proj"])
DRAW = "v2"  # the draw new goldens come from (each record names its own: the stored "v1" ones came from hypothesis)
DPO_LOSSES = (["sigmoid"], ["hinge"], ["ipo"], ["sigmoid", "sft"])
GRPO_LOSSES = ("grpo", "dapo", "dr_grpo", "bnpo")
TASKS = ("sft", "dpo", "orpo", "kto", "grpo")
SEEDS = (42, 0, 3407)  # TrainingArguments' default and two others: the trainer seeds torch with it before the adapter


def _maker():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_probe_cases", ROOT / "tools" / "make_probe_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ARCHS_V2 = ("gemma2", "gemma3_text", "llama", "mistral", "phi3", "qwen2", "qwen3")  # pinned: a new architecture in
# make_probe_cases.py must not move the draw (a test checks each is there)
ALPHABET = "abcdefgh xyz.,!?'\"[]{}<>\n\t é中😀-_/\\"
# the draw leans where the stored v1 set is thin: LoRA and DoRA, bf16, non-reentrant checkpointing
ADAPTERS = (("full", 2), ("lora", 5), ("dora", 3))
CHECKPOINTING = (("off", 3), ("reentrant", 3), ("non-reentrant", 4))
# "q1": QLoRA (4-bit bitsandbytes, made where bitsandbytes is installed: its CPU backend) on the trainers whose `trl`
# command passes get_quantization_config to the trainer (the experimental ORPOTrainer has no such command)
# "q2": ORPO with 4-bit QLoRA, its model loaded by the experimental ORPOTrainer from the path with the
# quantization config in model_init_kwargs (no `trl orpo` command: a user's script); the trainer then runs peft's
# prepare_model_for_kbit_training. "q8": 8-bit (load_in_8bit) on every trainer. Each a draw of its own, so that q1's
# configs do not move
DRAWS = ("v2", "q1", "q2", "q8")
QUANTIZED_DRAWS = ("q1", "q2", "q8")
QLORA_TASKS = ("sft", "dpo", "kto", "grpo")
TASKS_OF_DRAW = {"q1": QLORA_TASKS, "q2": ("orpo",), "q8": TASKS}
QLORA_ADAPTERS = (("lora", 3), ("dora", 1))


def _pick(rng: random.Random, weighted: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([name for name, _ in weighted], weights=[w for _, w in weighted])[0]


def _text(rng: random.Random) -> str:
    """Messy text: 1-30 characters of ALPHABET (markup, quotes, tabs, newlines, CJK, an emoji), never blank."""
    while True:
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 30)))
        if text.strip():
            return text


def draw_case(index: int, version: str = DRAW) -> dict:
    """Config number ``index`` of the draw ``version``: a pure function of the two (``random.Random`` seeded with
    the string ``probe-goldens/<version>/<index>``, hashed by sha512 whatever PYTHONHASHSEED), so no change to this
    tool's text, another module's or the draw's length moves it. The (architecture, task) pair goes round with the
    index, so every path is covered from the first 35 configs on."""
    if version not in DRAWS:
        raise ValueError(f"draw {version!r} is not this tool's (v1: tools/probe_goldens_v1.py, in a fresh process)")
    rng = random.Random(f"probe-goldens/{version}/{index}")
    quantized = version in QUANTIZED_DRAWS
    tasks = TASKS_OF_DRAW.get(version, TASKS)
    arch, task = [(a, t) for t in tasks for a in ARCHS_V2][index % (len(tasks) * len(ARCHS_V2))]
    n = rng.randint(2, 4)
    adapter = _pick(rng, QLORA_ADAPTERS if quantized else ADAPTERS)
    config: dict[str, Any] = {"learning_rate": rng.choice([1e-5, 1e-4, 1e-3]), "per_device_train_batch_size": n,
                              "max_length": 128, "bf16": rng.random() < 0.5, "seed": rng.choice(SEEDS)}
    checkpointing = _pick(rng, CHECKPOINTING)
    if checkpointing != "off":
        config["gradient_checkpointing"] = True
        config["gradient_checkpointing_kwargs"] = {"use_reentrant": checkpointing == "reentrant"}
    if adapter != "full":
        config.update(use_peft=True, lora_r=rng.choice([2, 4, 8]), lora_alpha=rng.choice([8, 16]), lora_dropout=0.0,
                      lora_target_modules=rng.choice(TARGETS.get(arch, DEFAULT_TARGETS)), use_dora=adapter == "dora")
    if version == "q8":
        config.update(load_in_8bit=True)
    elif quantized:  # ModelConfig's keys, which the `trl` scripts turn into get_quantization_config's BitsAndBytesConfig
        config.update(load_in_4bit=True, bnb_4bit_quant_type=rng.choice(["nf4", "fp4"]),
                      use_bnb_nested_quant=rng.random() < 0.5)
    beta = rng.choice([0.05, 0.1, 0.5])
    if task == "dpo":
        loss = rng.choice(DPO_LOSSES)
        config.update(beta=beta, loss_type=loss)
        if len(loss) > 1:
            config["loss_weights"] = [1.0, rng.choice([0.5, 1.0])]
    elif task == "orpo":
        config.update(beta=beta, max_completion_length=64)
    elif task == "kto":
        config.update(beta=beta, loss_type=rng.choice(["kto", "apo_zero_unpaired"]),
                      desirable_weight=rng.choice([1.0, 1.5]), undesirable_weight=1.0)
    elif task == "grpo":  # n prompts, each sampled twice: one generation batch, one micro-batch
        config.update(per_device_train_batch_size=2 * n, num_generations=2, max_completion_length=8,
                      beta=rng.choice([0.0, 0.04]), loss_type=rng.choice(GRPO_LOSSES),
                      temperature=rng.choice([0.7, 1.0]))
        del config["max_length"]
    rows = []
    for row in range(n):
        prompt = [{"role": "user", "content": _text(rng)}]
        if rng.random() < 0.5:
            prompt = [{"role": "system", "content": _text(rng)}] + prompt
        if task == "sft":
            rows.append({"messages": prompt + [{"role": "assistant", "content": _text(rng)}]})
        elif task == "grpo":  # the prompt's index keeps the groups apart when two drawn texts are equal
            rows.append({"prompt": prompt[:-1] + [{"role": "user", "content": f"{row}. {prompt[-1]['content']}"}]})
        elif task == "kto":  # both labels present: KTOTrainer needs desirable and undesirable rows
            rows.append({"prompt": prompt, "completion": [{"role": "assistant", "content": _text(rng)}],
                         "label": row % 2 == 0})
        else:
            rows.append({"prompt": prompt, "chosen": [{"role": "assistant", "content": _text(rng)}],
                         "rejected": [{"role": "assistant", "content": _text(rng)}]})
    return {"arch": arch, "task": task, "adapter": adapter, "checkpointing": checkpointing, "config": config,
            "rows": rows}


def draw_cases(count: int, version: str = DRAW) -> list[dict]:
    """The first ``count`` configs of the draw ``version``."""
    return [draw_case(index, version) for index in range(count)]


def models(folder: Path, archs: list[str] | None = None) -> dict[str, Path]:
    """One tiny random model per architecture (``archs``: those only; seeded: the same weights every time), built
    once under ``folder``."""
    maker = _maker()
    out = {}
    for arch in sorted(maker.ARCHITECTURES) if archs is None else archs:
        path = folder / arch
        if not (path / "config.json").is_file():
            maker.tiny_model(path, arch=arch, tokenizer_name=TOKENIZER_OF.get(arch, "qwen2.5-instruct"))
        out[arch] = path
    return out


def write_case(folder: Path, case: dict, model: Path) -> Path:
    """The config as a TRL CLI file beside its rows."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.json").write_text(json.dumps(case["rows"], ensure_ascii=False, indent=1))
    config = {"model_name_or_path": str(model), "dataset_name": "rows.json", "output_dir": str(folder / "out"),
              "report_to": "none", "use_cpu": True, **case["config"]}
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return folder / "config.yaml"


TRAINERS = {  # task -> (config class, trainer class) as the `trl` commands import them
    "sft": ("trl:SFTConfig", "trl:SFTTrainer"),
    "dpo": ("trl:DPOConfig", "trl:DPOTrainer"),
    "orpo": ("trl.experimental.orpo:ORPOConfig", "trl.experimental.orpo:ORPOTrainer"),
    "kto": ("trl:KTOConfig", "trl:KTOTrainer"),
    "grpo": ("trl:GRPOConfig", "trl:GRPOTrainer"),
}


def reward_of_ids(completion_ids, **kwargs) -> list[float]:
    """GRPO's tiny reward function: a fixed hash of each completion's token ids in [0, 1) (ties are rare, so groups
    mostly have an advantage to push)."""
    return [(sum((i + 1) * t for i, t in enumerate(ids)) * 2654435761 % 1000) / 1000 for ids in completion_ids]


def _load(ref: str):
    import importlib

    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


@dataclass
class Truth:
    loss: float | None
    grads: dict[str, float | None]
    no_gradient: list[str]
    finite: bool
    rollouts: list[dict]  # GRPO: the rewards file of the trainer's own generations (empty otherwise)


def run_trainer(case: dict, config_path: Path) -> Truth:
    """The real trainer on one config: TRL's parser, get_peft_config, one batch of all rows in file order,
    compute_loss on the accelerator-prepared model, backward."""
    import torch
    from datasets import Dataset
    from torch.utils.data import SequentialSampler
    from trl import ModelConfig, ScriptArguments, TrlParser, get_peft_config, get_quantization_config

    _fingerprints_off()
    config_class, trainer_class = (_load(ref) for ref in TRAINERS[case["task"]])
    script, args, model_args = TrlParser((ScriptArguments, config_class, ModelConfig)).parse_yaml_file(
        str(config_path))
    args.disable_tqdm, args.dataloader_num_workers = True, 0
    # as the `trl <command>` scripts build it: the model by path (the trainer seeds torch with args.seed, then loads
    # it and wraps it with peft: LoRA A's random init follows that seed)
    args.model_init_kwargs = {"revision": model_args.model_revision, "trust_remote_code": False,
                              "attn_implementation": model_args.attn_implementation, "dtype": model_args.dtype}
    tokenizer = _tokenizer(model_args.model_name_or_path)
    extra: dict[str, Any] = {}
    groups: list[dict] = []
    if case["task"] == "grpo":
        def reward_of_ids_recorded(prompts, completion_ids, **kwargs):
            rewards = reward_of_ids(completion_ids)
            groups.extend({"prompt": p, "completion": list(ids), "reward": r}
                          for p, ids, r in zip(prompts, completion_ids, rewards))
            return rewards
        reward_of_ids_recorded.__name__ = "reward_of_ids"
        extra["reward_funcs"] = reward_of_ids_recorded
    if (model_args.load_in_4bit or model_args.load_in_8bit) and case["task"] == "orpo":
        # the experimental ORPOTrainer takes no quantization_config: a script hands it to from_pretrained through
        # model_init_kwargs (the trainer's device_map default, "auto", is the CPU here)
        args.model_init_kwargs["quantization_config"] = get_quantization_config(model_args)
    elif model_args.load_in_4bit or model_args.load_in_8bit:  # as the `trl` scripts pass it (sft.py, dpo.py, ...)
        extra["quantization_config"] = get_quantization_config(model_args)
    trainer = trainer_class(model=model_args.model_name_or_path, args=args,
                            train_dataset=Dataset.from_list(case["rows"]), processing_class=tokenizer,
                            peft_config=get_peft_config(model_args), **extra)
    if case["task"] != "grpo":
        # the rows in file order, as mldebug batches them: in bf16 the order of the sum over rows shows in the last bits
        trainer._get_train_sampler = lambda *args, **kwargs: SequentialSampler(trainer.train_dataset)
    _checkpointing_as_train(trainer, args)
    batch = next(iter(trainer.get_train_dataloader()))
    model = trainer.accelerator.prepare_model(trainer.model)  # as training does: autocast on forward, fp32 logits out
    model.train()
    if case["task"] == "grpo":  # the trainer's own rollouts: generation with the tiny model, rewards, advantages
        trainer.current_gradient_accumulation_steps = args.gradient_accumulation_steps  # as train() sets it
        batch = trainer._prepare_inputs(batch)
    loss = trainer.compute_loss(model, batch)
    finite = bool(torch.isfinite(loss.detach()).all())
    if finite and loss.requires_grad:
        loss.backward()
    params = dict(trainer.model.named_parameters())
    grads: dict[str, float | None] = {}
    for name, p in params.items():
        if p.requires_grad:
            grads[name] = None if p.grad is None else float(p.grad.double().norm())
    finite = finite and all(g is None or math.isfinite(g) for g in grads.values())
    no_gradient = [n for n, g in grads.items() if not g and not _zero_by_design(n, params)]
    return Truth(float(loss.detach()), grads, no_gradient, finite, _rollout_lines(groups))


def _checkpointing_as_train(trainer: Any, args: Any) -> None:
    """Gradient checkpointing as ``Trainer.train()`` turns it on (transformers 5.24 trainer.py, "Activate activation
    checkpointing if needed": the trainer's ``__init__`` leaves it off, so a harness that calls ``compute_loss``
    without ``train()`` ran every checkpointed config without the backward's recompute; session 14 found it on an
    8-bit DoRA config whose recompute fails). 4.x: ``gradient_checkpointing_enable`` with the same kwargs."""
    enabled = getattr(args, "activation_checkpointing", None)
    if enabled is None:
        enabled = args.gradient_checkpointing
    if not enabled:
        return
    kwargs = dict(getattr(args, "activation_checkpointing_kwargs", None) or args.gradient_checkpointing_kwargs or {})
    every_n_layers, offload = kwargs.pop("every_n_layers", 1), kwargs.pop("offload", False)
    if hasattr(trainer.model, "activation_checkpointing_enable"):
        trainer.model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs or None,
                                                      every_n_layers=every_n_layers, offload=offload)
    else:
        trainer.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs or None)


def _rollout_lines(groups: list[dict]) -> list[dict]:
    """The trainer's rollouts as a rewards file's lines (sources/rewards.py): one per prompt, its completions as
    the token ids generated and the reward each got, in generation order."""
    lines: list[dict] = []
    for item in groups:
        if not lines or lines[-1]["prompt"] != item["prompt"]:
            lines.append({"prompt": item["prompt"], "completions": [], "rewards": []})
        lines[-1]["completions"].append(item["completion"])
        lines[-1]["rewards"].append(item["reward"])
    return lines


_TOKENIZERS: dict[str, tuple[Any, Any, str, str]] = {}


def _tokenizer(path: str) -> Any:
    """The model folder's tokenizer, loaded once per process (parsing a 150k-entry tokenizer.json was 80% of a
    config's time), handed to each trainer as loaded: the DPO, KTO and GRPO trainers set a missing pad token to eos
    on the object they get, and ORPO refuses a tokenizer without one, so the pad token and sides are put back."""
    from transformers import AutoTokenizer

    if path not in _TOKENIZERS:
        tokenizer = AutoTokenizer.from_pretrained(path)
        _TOKENIZERS[path] = (tokenizer, tokenizer.pad_token, tokenizer.padding_side, tokenizer.truncation_side)
    tokenizer, pad, padding_side, truncation_side = _TOKENIZERS[path]
    tokenizer.pad_token = pad
    tokenizer.padding_side, tokenizer.truncation_side = padding_side, truncation_side
    return tokenizer


def _fingerprints_off() -> None:
    """datasets hashes each map's function (the whole tokenizer, by dill) to name its cache: 80% of a config's time.
    The goldens never reuse a cache, so the name is random and nothing is cached; the rows are mapped the same."""
    import datasets
    from datasets import arrow_dataset, fingerprint

    datasets.disable_caching()
    for module in (fingerprint, arrow_dataset):
        module.update_fingerprint = lambda *args, **kwargs: fingerprint.generate_random_fingerprint()


def _zero_by_design(name: str, params: dict[str, Any]) -> bool:
    """LoRA's A while B is still 0: the first step's gradient is 0 by construction."""
    if "lora_A" not in name:
        return False
    partner = params.get(name.replace("lora_A", "lora_B"))
    return partner is not None and not bool(partner.detach().any())


def make(count: int, out: Path, work: Path, shard: tuple[int, int] = (0, 1), ids: list[int] | None = None,
         start: int = 0, draw: str = DRAW) -> int:
    """Run the trainer on configs ``start``..``count``-1 of the draw (those of ``shard`` K/N: index % N == K) and store
    them at ``out`` (a shard's own file when N > 1: ``merge`` joins them). A run cut short goes on where it stopped.
    One process for every config: imports, the tiny models and each tokenizer are made once."""
    _one_thread()
    built = models(work / "models")
    part, parts = shard
    target = out if parts == 1 else _shard_path(out, part)
    records = _resumed(target, draw)
    done = {_key(r) for r in records}
    order = range(start, count) if ids is None else ids  # --id: in the order given
    for index in order:
        case = draw_case(index, draw)
        if index % parts != part or (draw, index) in done:
            continue
        config_path = write_case(work / f"case-{index:03d}", case, built[case["arch"]])
        cpu = time.process_time()
        try:
            truth = run_trainer(case, config_path)
        except Exception as exc:  # the trainer refused the config: mldebug must refuse it too
            truth = None
            refused = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        record = {"draw": draw, "id": index, **case}
        if truth is None:
            record["refused"] = refused
        else:
            record.update(loss=truth.loss, grads=truth.grads, no_gradient=truth.no_gradient, finite=truth.finite)
            if truth.rollouts:
                record["rollouts"] = truth.rollouts
        records.append(record)
        print(f"{index:3d} {case['arch']:12s} {case['task']:4s} {case['adapter']:4s} {case['checkpointing']:13s} "
              f"bf16={case['config']['bf16']!s:5s} cpu {time.process_time() - cpu:5.1f}s "
              + (f"loss {truth.loss:.6g}" if truth else record["refused"]), flush=True)
        _save(target, records)  # a long run leaves usable goldens when cut short
    _save(target, records)
    print(f"{len(records)} configs, {sum('refused' in r for r in records)} refused by the trainer -> {target}")
    return 0


def _one_thread() -> None:
    """One torch thread: on the shared 2-core machine a second intra-op thread spins more than it computes (DPO
    LoRA configs: 7.3 and 12.0 CPU s with the default 2 threads, 5.8 and 7.9 with one), and ``make`` and ``replay``
    can then run side by side. The sums' order changes in the last bits only (far below the 1e-4 compared).
    ``PROBE_GOLDENS_THREADS`` sets another count (benchmarks/bench_probe_goldens.py compares them)."""
    import os

    import torch

    torch.set_num_threads(int(os.environ.get("PROBE_GOLDENS_THREADS", "1")))


def _key(record: dict) -> tuple[str, int]:
    """A record's identity: its draw and its index in that draw."""
    return record.get("draw", "v1"), record["id"]


def merge(out: Path, parts: int, add: list[Path] | None = None, only: set[int] | None = None) -> int:
    """Join the shards' records in (draw, id) order into ``out`` (every record made: a shard cut short leaves gaps in
    the ids, and each record keeps its draw and id). ``add``: files of ``make --out FILE --id`` runs, joined to the
    records ``out`` already holds (``only``: just those ids of them, e.g. the ones replayed)."""
    files = [out, *(_shard_path(out, part) for part in range(parts))]
    if add:
        files = [out, *add]
    by_key = {_key(r): r for file in files if file.is_file() for r in load(file)["cases"]
              if file == out or only is None or r["id"] in only}
    kept = [by_key[k] for k in sorted(by_key)]
    _save(out, kept)
    counts = {d: sum(k[0] == d for k in by_key) for d in sorted({k[0] for k in by_key})}
    print(f"{len(kept)} configs ({', '.join(f'{d}: {n}' for d, n in counts.items())}) -> {out}")
    return 0


def _shard_path(out: Path, part: int) -> Path:
    return out.with_name(f"{out.name}.shard{part}")


def _resumed(out: Path, draw: str) -> list[dict]:
    """The records already stored at ``out`` (another draw's are kept as they are; this draw's are its own)."""
    if not out.is_file():
        return []
    return [r for r in load(out)["cases"] if _key(r)[0] != draw or {k: r[k] for k in draw_case(r["id"], draw)} ==
            draw_case(r["id"], draw)]


def _save(out: Path, records: list[dict]) -> None:
    import importlib.metadata as md

    versions = {p: md.version(p) for p in ("torch", "transformers", "trl", "peft", "datasets", "accelerate",
                                          "hypothesis")}
    if any(r.get("draw") in QUANTIZED_DRAWS for r in records):
        versions["bitsandbytes"] = md.version("bitsandbytes")
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as handle:
        json.dump({"versions": versions, "made_by": "tools/probe_goldens.py make", "cases": records}, handle,
                  ensure_ascii=False, separators=(",", ":"))


def load(path: Path = GOLDEN) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def close(a: float | None, b: float | None, relative: float = RELATIVE) -> bool:
    if a is None or b is None:
        return (a or 0.0) == (b or 0.0)
    return math.isclose(a, b, rel_tol=relative, abs_tol=ABSOLUTE)


def replay_one(record: dict, folder: Path, model: Path) -> list[str]:
    """mldebug's probe on one stored config: the disagreements with the trainer, one line each (none: agreed)."""
    from mldebug_cli.core.errors import InputError, UsageError
    from mldebug_cli.pipelines.probe import ProbeOptions, build_report

    config_path = write_case(folder, record, model)
    rewards = None
    if record.get("rollouts"):
        rewards = folder / "rewards.jsonl"
        rewards.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in record["rollouts"]))
    try:
        report = build_report(ProbeOptions(config=str(config_path), model=str(model), allow_outside_paths=True,
                                           rewards=None if rewards is None else str(rewards)))
    except (InputError, UsageError) as exc:
        return [] if "refused" in record else [f"mldebug refused a config the trainer ran: {exc.message}"]
    if "refused" in record:
        return [f"the trainer refused it ({record['refused']}), mldebug probed it"]
    codes = {f.code for f in report.findings}
    problems = []
    if ("GP008" in codes) != (not record["finite"]):
        problems.append(f"GP008 {'fired' if 'GP008' in codes else 'silent'}; trainer finite={record['finite']}")
    if not record["finite"]:
        return problems
    if ("GP002" in codes) != bool(record["no_gradient"]):
        problems.append(f"GP002 {'fired' if 'GP002' in codes else 'silent'}; trainer: no gradient on "
                        f"{record['no_gradient'][:3]}")
    probe = report.details["probe"]
    loss = sum(t["weight"] * t["losses"][0] for t in probe["terms"])
    if not close(loss, record["loss"]):
        problems.append(f"loss {loss:.8g} vs trainer {record['loss']:.8g}")
    mine = {t["name"]: t["grad_norm"] for t in probe["tensors"]}
    if set(mine) != set(record["grads"]):
        problems.append(f"trainable tensors differ: {sorted(set(mine) ^ set(record['grads']))[:3]}")
    off = [n for n in record["grads"] if n in mine and not close(mine[n], record["grads"][n])]
    if off:
        worst = max(off, key=lambda n: abs((mine[n] or 0) - (record["grads"][n] or 0)) / max(abs(record["grads"][n] or 0), 1e-30))
        problems.append(f"{len(off)} of {len(record['grads'])} gradient norms differ (worst {worst}: "
                        f"{mine[worst]} vs {record['grads'][worst]})")
    return problems


def replay(golden: Path, work: Path, limit: int | None, ids: list[int] | None = None, start: int = 0,
           seed: int | None = None) -> int:
    """``seed``: the seed of a file whose harness set ``args.seed`` itself and did not store it (session 9's file:
    ``args.seed = 0``; the trainer seeds LoRA A's init with it), given to every config that names none."""
    sys.path.insert(0, str(ROOT))
    _one_thread()
    built = models(work / "models")
    records = [r for r in load(golden)["cases"] if (ids is None or r["id"] in ids) and r["id"] >= start][:limit]
    if seed is not None:
        records = [{**r, "config": {"seed": seed, **r["config"]}} for r in records]
    disagreeing = 0
    for record in records:
        problems = replay_one(record, work / f"replay-{record['id']:03d}", built[record["arch"]])
        disagreeing += bool(problems)
        status = "ok" if not problems else "; ".join(problems)
        print(f"{record['id']:3d} {record['arch']:12s} {record['task']:4s} {record['adapter']:4s} "
              f"{record['checkpointing']:13s} bf16={record['config']['bf16']!s:5s} {status}", flush=True)
    print(f"{disagreeing} of {len(records)} configs disagree")
    return 1 if disagreeing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make")
    made.add_argument("--count", type=int, default=300)
    made.add_argument("--out", type=Path, default=GOLDEN)
    made.add_argument("--work", type=Path, default=Path("/tmp/probe-goldens"))
    made.add_argument("--draw", default=DRAW, choices=DRAWS, help="q1, q2 (ORPO), q8 (8-bit): QLoRA (needs bitsandbytes)")
    made.add_argument("--from", type=int, default=0, dest="start", help="the first id of the draw to make")
    made.add_argument("--shard", default="0/1", help="K/N: only the configs whose index %% N == K, to their own file")
    made.add_argument("--id", type=int, action="append", dest="ids", help="make only this config of the draw")
    merged = sub.add_parser("merge")
    merged.add_argument("--out", type=Path, default=GOLDEN)
    merged.add_argument("--parts", type=int, default=1)
    merged.add_argument("--add", type=Path, action="append", help="a make --out FILE to join to --out's records")
    merged.add_argument("--id", type=int, action="append", dest="ids", help="join only this id of the --add files")
    replayed = sub.add_parser("replay")
    replayed.add_argument("--golden", type=Path, default=GOLDEN)
    replayed.add_argument("--work", type=Path, default=Path("/tmp/probe-goldens"))
    replayed.add_argument("--limit", type=int)
    replayed.add_argument("--id", type=int, action="append", dest="ids", help="replay only this stored config")
    replayed.add_argument("--start", type=int, default=0, help="replay the stored configs from this id on")
    replayed.add_argument("--seed", type=int, help="the seed of configs that name none (an older file's harness seed)")
    args = parser.parse_args(argv)
    if args.command == "make":
        part, parts = (int(x) for x in args.shard.split("/"))
        return make(args.count, args.out, args.work, (part, parts), args.ids, args.start, args.draw)
    if args.command == "merge":
        return merge(args.out, args.parts, args.add, None if args.ids is None else set(args.ids))
    return replay(args.golden, args.work, args.limit, args.ids, args.start, args.seed)


if __name__ == "__main__":
    sys.exit(main())
