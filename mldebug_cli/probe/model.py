"""Build the model the way the framework does: transformers' loader, peft's get_peft_model with the config's
LoraConfig (or the checkpoint's adapter), gradient checkpointing with its kwargs; and say who turns on
``enable_input_require_grads`` at the target versions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.probe.subject import GradientPath
from mldebug_cli.sources.model_config import checked_sizes

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
FIXED_IN_TRANSFORMERS = (5, 0)  # activation_checkpointing_enable calls it for every input_ids model
DEFAULT_SEED = 42  # TrainingArguments' seed when the config names none


@dataclass
class Built:
    model: Any
    path: GradientPath
    peft: bool
    fused_head: bool = False  # the model carries the trainer's fused LM head: its log-probs come from it


def parameter_count(model_dir: str) -> int | None:
    """The parameter count a config.json implies (embedding, attention, MLP, norms), for the time estimate."""
    import json

    try:
        config = json.loads(read_text(Path(model_dir) / "config.json"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(config, dict):
        return None
    checked_sizes(config, str(Path(model_dir) / "config.json"))
    config = config.get("text_config", config)
    if not isinstance(config, dict):
        return None
    try:
        h, layers, vocab = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]
        inter = config.get("intermediate_size", 4 * h)
        heads = config.get("num_attention_heads", 1)
        kv = config.get("num_key_value_heads", heads)
    except KeyError:
        return None
    try:
        head_dim = config.get("head_dim") or h // heads
        attention = h * heads * head_dim * 2 + h * kv * head_dim * 2
        per_layer = attention + 3 * h * inter + 2 * h
        embeddings = vocab * h * (1 if config.get("tie_word_embeddings", False) else 2)
        return int(embeddings + layers * per_layer + h)
    except (TypeError, ValueError, ZeroDivisionError):  # a size of null or text: transformers says what is wrong
        return None


def _fits_in_memory(model_dir: str, itemsize: int) -> None:
    import os

    params = parameter_count(model_dir)
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return
    if params is not None and params * itemsize > total:
        raise InputError(f"{Path(model_dir) / 'config.json'}: a model of {params:,} parameters needs "
                         f"{params * itemsize / 2**30:,.1f} GiB for its weights alone, more than this machine's "
                         f"{total / 2**30:,.1f} GiB", hint="probe a smaller model of the same architecture")


def _check_weights(folder: str) -> None:
    """Every ``.safetensors`` file of the folder: its header describes the file (sources/safetensors_header.py)."""
    from mldebug_cli.core.safe_io import stays_inside
    from mldebug_cli.sources.hub import hub_cache
    from mldebug_cli.sources.safetensors_header import check_header

    path = Path(folder)
    if not path.is_dir():
        return
    for file in sorted(path.glob("*.safetensors"))[:10_000]:
        stays_inside(path, file, also=[hub_cache()])
        check_header(file)
    if (path / "config.json").exists():
        stays_inside(path, path / "config.json", also=[hub_cache()])


def build(model_dir: str, facts: Any, versions: Any, adapter: str | None = None, device: str = "cpu",
          fused_head: bool = True) -> Built:
    """``fused_head``: give the model the trainer's own fused LM head where the trainer has one (False: the user's
    functions read the full logits)."""
    import torch
    from transformers import AutoModelForCausalLM, set_seed
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # stderr is for mldebug's own progress lines
    dtype = getattr(torch, DTYPES.get(facts.model_dtype or "fp32", "float32"))
    _fits_in_memory(model_dir, dtype.itemsize)  # sizes checked and the weights sized before transformers allocates
    _check_weights(model_dir)
    # TRL's trainers call transformers' set_seed(args.seed) before they load the model and wrap it with peft
    # (trl/trainer/sft_trainer.py 1.16: "PEFT initializes the adapter weights randomly"): LoRA A's init follows it
    seed = facts.sampler.seed if facts.sampler is not None else DEFAULT_SEED
    set_seed(seed)
    quantization = quantization_config(facts)
    loaded: dict[str, Any] = {} if quantization is None else {"quantization_config": quantization, "device_map": None}
    try:
        # trust_remote_code=False: transformers refuses a folder's own code instead of asking on stdin (None asks)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, local_files_only=True,
                                                     trust_remote_code=False, **loaded)
    except Exception as exc:  # a refused pickle, a safetensors error, a shape mismatch: the folder's, said by name
        raise InputError(f"{model_dir}: cannot load the model ({type(exc).__name__}: {in_one_line(exc, 200)})") from None
    torch.nn.Module.to(model, device)  # (transformers types PreTrainedModel.to's first argument oddly)
    fused = fused_head and facts.fused_lm_head and _add_fused_lm_head(model, facts)
    described = None
    if quantization is not None and facts.task == "orpo" and (adapter is not None or facts.peft is not None):
        _prepare_kbit(model, facts)
    if adapter is not None or facts.peft is not None:
        model, described = _wrap(model, facts.peft, adapter, seed)
    path = _checkpointing(model, facts, versions, described)
    if quantization is not None and described is not None and facts.quantized_adapter_bf16:
        if facts.task != "orpo":
            _adapter_to_bf16(model)
        elif facts.dtype == "bf16" and facts.quantization == "4bit":  # the experimental ORPOTrainer's own cast
            from trl.experimental.utils import peft_module_casting_to_bf16

            peft_module_casting_to_bf16(model)
    return Built(model, path, described is not None, fused)


def quantization_config(facts: Any) -> Any | None:
    """The BitsAndBytesConfig TRL 1.16's ``get_quantization_config`` builds from the config's ModelConfig keys
    (``load_in_4bit``: nf4/fp4, double quantisation, the compute dtype from ``dtype``; ``load_in_8bit``), which
    its trainers pass to ``from_pretrained`` (``device_map`` None on the CPU). None: the config loads no quantized
    model. Without bitsandbytes probe cannot load the model as the run does, and says so."""
    if facts.quantization is None:
        return None
    import importlib.util

    key = f"load_in_{facts.quantization}"
    if importlib.util.find_spec("bitsandbytes") is None:
        raise InputError(f"{key}: probe cannot load the model quantized as the run does: bitsandbytes is not "
                         "installed", hint="pip install bitsandbytes (0.49 and later run 4-bit layers on the CPU), "
                                           f"or probe without {key} to see the unquantized model's gradients")
    from transformers import BitsAndBytesConfig

    if facts.quantization == "8bit":
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=DTYPES.get(facts.model_dtype or "fp32", "float32"),
                              bnb_4bit_quant_type=facts.quant_type or "nf4",
                              bnb_4bit_use_double_quant=bool(facts.double_quant))


def int8_dora_failure(exc: BaseException, model: Any, facts: Any) -> InputError | None:
    """The refusal for a failure of bitsandbytes' CPU 8-bit matmul on a DoRA layer, which a CPU run of the trainer
    meets as well (None: ``exc`` is another failure). peft's DoRA dequantises the 8-bit weight on each forward and,
    on the CPU only, puts it back with ``module.weight = module.weight.to(device)`` (peft/utils/integrations.py
    ``dequantize_module_weight``); bitsandbytes' ``Int8Params.to`` then keeps the int8 matrix as ``CB`` but not its
    scales (``SCB``: the layer moved them to its state on its first forward), so the layer's next forward takes
    ``SCB`` None into ``MatMul8bitFp`` (bitsandbytes 0.50.2): the backward's recompute under gradient checkpointing,
    or the next step's forward. TRL 1.16's trainers on the CPU stop there too (tools/probe_goldens.py draw q8, with
    checkpointing on as ``Trainer.train()`` turns it on). On a GPU peft does not move the weight back."""
    import importlib.metadata as md
    import traceback

    if not isinstance(exc, AttributeError) or "unsqueeze" not in str(exc):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames or "bitsandbytes" not in frames[-1].filename or "SCB" not in (frames[-1].line or ""):
        return None
    dora_8bit = [name for name, module in model.named_modules()
                 if type(module).__name__ == "Linear8bitLt" and any(getattr(module, "use_dora", {}).values())]
    if not dora_8bit:
        return None
    versions = {p: md.version(p) for p in ("peft", "bitsandbytes")}
    second = ("gradient checkpointing's recompute in the backward" if facts.gradient_checkpointing
              else "the layer's second forward")
    return InputError(
        f"load_in_8bit with DoRA: the run fails on the CPU at {second}: peft {versions['peft']}'s DoRA puts the "
        f"dequantised 8-bit weight back with .to(), which drops bitsandbytes {versions['bitsandbytes']}'s int8 "
        f"scales (SCB is None in MatMul8bitFp, {dora_8bit[0].removeprefix('base_model.model.')} first); TRL's "
        "trainer stops the same way on the CPU",
        hint="on a GPU peft does not move the weight back (not measured here); probe with use_dora: false or "
             "without load_in_8bit to see the gradients")


def _prepare_kbit(model: Any, facts: Any) -> None:
    """The experimental ORPOTrainer (TRL 1.16) runs peft's ``prepare_model_for_kbit_training`` on a quantized model
    before it wraps it: every other weight frozen and cast to fp32, input gradients on under checkpointing."""
    from peft import prepare_model_for_kbit_training

    prepare_model_for_kbit_training(model, use_gradient_checkpointing=bool(facts.gradient_checkpointing),
                                    gradient_checkpointing_kwargs=dict(facts.gradient_checkpointing_kwargs or {}))


def _adapter_to_bf16(model: Any) -> None:
    """TRL 1.16's SFT, DPO, KTO and GRPO trainers on a quantized model: the trainable adapter weights go to bf16
    (QLoRA's recipe), DoRA's magnitude vectors excepted (trl/trainer/sft_trainer.py)."""
    import torch

    for name, param in model.named_parameters():
        if param.requires_grad and "lora_magnitude_vector" not in name:
            param.data = param.data.to(torch.bfloat16)


def _add_fused_lm_head(model: Any, facts: Any) -> bool:
    """TRL's own fused LM head on the base model, before peft wraps it, as its trainers add it (trl/trainer/utils.py
    add_fused_lm_head: the log-probs in vocabulary chunks, each chunk's product summed in fp32; under bf16 this is
    not the bf16 logits' log-softmax). GRPO's divides by its sampling temperature. False: the installed TRL has none."""
    try:
        from trl.trainer.utils import add_fused_lm_head
    except ImportError:
        return False
    policy = facts.loss.policy
    temperature = policy.temperature if facts.task == "grpo" and policy is not None else 1.0
    add_fused_lm_head(model, temperature=temperature)
    return True


def _wrap(model: Any, peft_facts: Any, adapter: str | None, seed: int = DEFAULT_SEED) -> tuple[Any, str]:
    """``seed``: the one the trainer set before wrapping; a new adapter's A matrices are drawn under it, whether the
    trainer got the model by path or as an object (set_seed(args.seed) comes first either way, issue 33)."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if adapter is not None:
        _check_weights(adapter)
        try:
            wrapped = PeftModel.from_pretrained(model, adapter, is_trainable=True, trust_remote_code=False)
        except Exception as exc:  # a refused pickle, a shape mismatch with the model: the adapter's, said by name
            raise InputError(f"{adapter}: cannot load the adapter ({type(exc).__name__}: {in_one_line(exc, 200)})") from None
        config: Any = wrapped.peft_config["default"]  # the adapter's LoraConfig (its base PeftConfig lacks r)
    else:
        targets = peft_facts.target_modules
        config = LoraConfig(
            task_type="CAUSAL_LM", r=peft_facts.r, lora_alpha=peft_facts.alpha, lora_dropout=peft_facts.dropout,
            target_modules=list(targets) if isinstance(targets, (tuple, list)) else targets, bias="none",
            use_rslora=peft_facts.use_rslora, use_dora=peft_facts.method == "dora",
            modules_to_save=list(peft_facts.modules_to_save) or None,
            trainable_token_indices=list(peft_facts.trainable_token_indices) or None,
        )
        try:
            wrapped = get_peft_model(model, config)
        except ValueError as exc:  # peft refuses the config (NoMatchingPeftModuleError: no module matches): so does the run
            raise InputError(f"lora_target_modules {config.target_modules!r}: peft refuses it "
                             f"({type(exc).__name__}: {in_one_line(exc, 200)})",
                             hint="target_modules as a string is a regular expression over the full module name; "
                                  "a list names modules") from None
    targets = sorted(config.target_modules) if isinstance(config.target_modules, (set, list)) else config.target_modules
    saved = f", modules_to_save {', '.join(config.modules_to_save)}" if config.modules_to_save else ""
    tokens = ", trainable tokens" if getattr(config, "trainable_token_indices", None) else ""
    method = "DoRA" if getattr(config, "use_dora", False) else "LoRA"
    init = "" if adapter is not None else f", initialised under seed {seed}"
    return wrapped, (f"{method} r={config.r} on {', '.join(targets) if isinstance(targets, list) else targets}"
                     f"{saved}{tokens}{init}")


def _checkpointing(model: Any, facts: Any, versions: Any, peft: str | None) -> GradientPath:
    from mldebug_cli.frameworks.versions import parse

    if not facts.gradient_checkpointing:
        return GradientPath(peft, False, False, True, "no gradient checkpointing")
    kwargs = dict(facts.gradient_checkpointing_kwargs or {})
    transformers = versions.version("transformers")
    fixed = parse(transformers) >= FIXED_IN_TRANSFORMERS if transformers else True
    if "use_reentrant" not in kwargs:
        kwargs["use_reentrant"] = not fixed  # transformers 4.x checkpointed reentrantly unless told otherwise
    enable = getattr(model, "activation_checkpointing_enable", None)  # transformers 5's name; 4.x: the old one
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    if peft is None:
        by = "full fine-tuning: the embeddings are trainable"
    elif fixed:
        by = f"transformers {transformers} (its gradient checkpointing turns it on)"
    elif facts.enables_input_require_grads:  # TRL's trainers, axolotl's and LLaMA-Factory's model loaders
        by = f"the {facts.framework} trainer"
    else:
        by = f"nobody: transformers {transformers} and the {facts.framework} trainer leave it off with get_peft_model"
        model.disable_input_require_grads()  # what the target versions do; the installed transformers fixes it
        return GradientPath(peft, True, bool(kwargs["use_reentrant"]), False, by)
    return GradientPath(peft, True, bool(kwargs["use_reentrant"]), True, by)
