"""LLaMA-Factory: the keys of its argument dataclasses, and how it counts training rows.

``llamafactory-cli train`` passes the whole YAML to ``HfArgumentParser`` over ModelArguments,
DataArguments, its TrainingArguments (Seq2SeqTrainingArguments plus its own), FinetuningArguments and
GeneratingArguments; a key none of them has stops the run unless ``ALLOW_EXTRA_ARGS`` is set. Its own
fields come from the installed package, else from the stored list of llamafactory 0.9.5; the
Seq2SeqTrainingArguments part from the target transformers.

Rows: ``max_samples`` caps each dataset on its own (``_load_single_dataset`` in ``data/loader.py``
selects the first ``min(max_samples, len(dataset))`` rows of each one before they are merged), then
``val_size`` is split off the merged rows; ``schedule.arithmetic.rows_after_max_samples`` counts them
from the per-dataset sizes preflight measures.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.frameworks import record, schema, versions
from mldebug_cli.frameworks.batch_tokenizer import BatchTokenizer
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.framework import Detection, Framework, VisionPath, VisionRows
from mldebug_cli.frameworks.hf import framework as hf
from mldebug_cli.frameworks.llama_factory.templates import VERSION, LfTemplate, Settings
from mldebug_cli.frameworks.llama_factory.trainer_facts import llama_factory_trainer_facts
from mldebug_cli.frameworks.preference_config import PreferenceConfig, positive_length
from mldebug_cli.frameworks.rows import EncodedRow, EncodedSide, EncodedTurn, NotEmulated, PairPreparation, RowProfile
from mldebug_cli.schedule.model import DatasetMerge, Packing, RunSpec
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.training_plan import DatasetPlan, Setting, TrainingPlan, at, resolve_dir, set_key

DATACLASSES = {"ModelArguments": "model_args", "DataArguments": "data_args", "TrainingArguments": "training_args",
               "FinetuningArguments": "finetuning_args", "GeneratingArguments": "generating_args"}
# DataArguments.__post_init__ (hparams/data_args.py) raises on these
CONFLICTS = ((("mask_history", "train_on_prompt"), "LLaMA-Factory refuses the file: `mask_history` is incompatible "
              "with `train_on_prompt` (DataArguments)"),)
ON_UNKNOWN = ("HfArgumentParser rejects the file (ValueError: Some keys are not used by the HfArgumentParser) "
              "unless ALLOW_EXTRA_ARGS=1 is set")


DEFAULT_CUTOFF = 2048
# llamafactory 0.9.5's METADATA pins datasets<=4.0.0, whose interleave_datasets knows first_exhausted and
# all_exhausted only: merge_dataset maps interleave_once to all_exhausted_without_replacement, which it refuses
INTERLEAVE_ONCE_REFUSED = (f"mix_strategy interleave_once merges with stopping_strategy "
                           f"all_exhausted_without_replacement, and the datasets LLaMA-Factory {VERSION} allows "
                           "(<=4.0.0) raises ValueError: all_exhausted_without_replacement is not supported")


def read_spec(config: ConfigFile, framework: str, world_size: int, targets: versions.TargetVersions,
              task: str | None = None) -> RunSpec:
    """TrainingArguments, with LLaMA-Factory's packing, val_size and max_samples."""
    defaults = hf.TrainerDefaults(packing=_packing, validation_key="val_size", max_samples_key="max_samples",
                                  merge=_merge, warmup_share_key="warmup_ratio")
    return hf.read_spec(config, framework, world_size, targets, task, defaults)


def _val_size(value: object) -> float | int:
    """val_size as ``split_dataset`` passes it to ``train_test_split``: HfArgumentParser's ``parse_dict`` keeps the
    YAML's type, so a whole number (1 too) is a row count, a fraction a share; a float above 1 becomes a count."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return int(value) if isinstance(value, int) or value > 1 else float(value)


def _merge(r: SpecReader) -> DatasetMerge:
    """DataArguments' ``mix_strategy`` and ``interleave_probs`` (a comma-separated list), the ``val_size`` split and
    the seed both draw with: ``_get_merged_dataset`` and ``split_dataset`` run on the capped rows before the
    processor drops any (schedule.merging replays them)."""
    probs = r.raw("interleave_probs", "interleave_probs")
    try:
        probabilities = tuple(float(p) for p in str(probs).split(",") if p.strip()) if probs is not None else None
    except ValueError:
        raise InputError(f"interleave_probs must be numbers separated by commas, got {probs!r}") from None
    strategy = str(r.text("mix_strategy", "mix_strategy", "concat"))
    return DatasetMerge(strategy=strategy, probabilities=probabilities, seed=r.integer("seed", "seed", 42),
                        val_size=_val_size(r.number("validation_split", "val_size", 0.0)),
                        refused=INTERLEAVE_ONCE_REFUSED if strategy == "interleave_once" else None)


def _packing(r: SpecReader) -> Packing:
    stage = r.text(None, "stage", "sft")
    neat = r.flag(None, "neat_packing", False)
    enabled = r.flag("packing", "packing", None)
    key = "packing" if r.has("packing") else ("neat_packing" if neat else "stage")
    on = bool(neat or (enabled if enabled is not None else stage == "pt"))  # pre-training packs by default
    if on and "packing" not in r.keys:
        r.keys["packing"] = key
    return Packing(on, key, r.integer(None, "cutoff_len", DEFAULT_CUTOFF))


def key_schema(config: ConfigFile, targets: versions.TargetVersions, task: str | None = None) -> schema.KeySchema:
    """LLaMA-Factory's own dataclasses' fields over Seq2SeqTrainingArguments' (its ``stage:`` key names the trainer;
    ``task`` decides nothing)."""
    own, source = _own_keys(targets)
    base = hf.training_arguments_schema(targets, seq2seq=True)
    renamed = record.dropped("llamafactory", "LLaMA-Factory", DATACLASSES, own,
                             targets.version("llamafactory") or versions.installed("llamafactory"))
    lf = schema.KeySchema("llama-factory", source, own, ON_UNKNOWN, conflicts=CONFLICTS, renamed=renamed)  # OmegaConf reads 5e-5 as a number
    return lf.merged(base, source=f"{source} over {base.source}")


def _own_keys(targets: versions.TargetVersions) -> tuple[dict[str, schema.KeyType], str]:
    installed = versions.installed("llamafactory")
    target = targets.get("llamafactory")
    if installed and target.version in (None, installed):
        try:
            import importlib

            module = importlib.import_module("llamafactory.hparams")
            return schema.dataclass_keys(getattr(module, n) for n in DATACLASSES), f"llamafactory {installed} (installed)"
        except ImportError:
            pass
    release = record.release_for("llamafactory", target.version)
    wanted = "" if release == target.version or not target.version else f", standing in for {target.describe()}"
    return schema.recorded_keys("llamafactory", DATACLASSES, release), f"llamafactory {release} (recorded from its wheel{wanted})"


FORMATS = {"alpaca": "alpaca", "sharegpt": "sharegpt"}
# keys only LLaMA-Factory 0.9.5's v1 engine reads (llamafactory/v1/config; none is a v0 hparams field)
V1_KEYS = ("train_dataset", "global_batch_size", "batching_strategy", "lr_scheduler_config", "optim_config",
           "dist_config", "peft_config", "init_config", "kernel_config", "quant_config")


def v1_engine(config: ConfigFile) -> str | None:
    """What selects LLaMA-Factory's v1 engine, if anything does: ``USE_V1`` set as its cli.py reads it
    (``is_env_enabled``: true, y or 1) or keys only the v1 config has."""
    keys = [k for k in V1_KEYS if config.has(k)]
    env = os.environ.get("USE_V1", "0").lower() in ("true", "y", "1")
    if not env and not keys:
        return None
    said = (["USE_V1 is set"] if env else []) + ([f"the config sets {', '.join(keys)}"] if keys else [])
    return (f"LLaMA-Factory's v1 engine is selected ({'; '.join(said)}): it is not emulated; mldebug follows the v0 "
            "engine of `llamafactory-cli train` (its data path, batching and steps)")


def read_plan(config: ConfigFile) -> TrainingPlan:
    """Datasets from ``dataset_dir/dataset_info.json``, masking and cutoff_len (default 2048) of a LLaMA-Factory config."""
    v1 = v1_engine(config)
    names = config.get("dataset")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise InputError(f"{config.path}: {v1}" if v1 and config.has("train_dataset") else
                         f"{config.path}: no dataset key: LLaMA-Factory configs name their datasets in `dataset`")
    dataset_dir = str(config.get("dataset_dir", "data"))
    folder = resolve_dir(config, dataset_dir)
    info_path = folder / "dataset_info.json"
    try:
        info = json.loads(read_text(info_path))
    except FileNotFoundError:
        raise InputError(f"{at(config, 'dataset')}: {info_path} not found (dataset_dir is {dataset_dir!r})") from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, a number too long
        raise InputError(f"{info_path}: not readable JSON ({in_one_line(exc, 200)})") from None
    datasets = [_dataset(config, info, info_path, folder, name, "dataset") for name in names]
    eval_names = config.get("eval_dataset")
    if isinstance(eval_names, str):
        eval_names = [n.strip() for n in eval_names.split(",") if n.strip()]
    eval_datasets = tuple(_dataset(config, info, info_path, folder, str(name), "eval_dataset") for name in eval_names or ())
    options = lf_options(config)
    if options.train_on_prompt:
        train_on = Setting("all", "train_on_prompt")
    elif options.mask_history:
        train_on = Setting("last", "mask_history")
    else:
        train_on = Setting("assistant", set_key(config, "train_on_prompt"))
    max_length = Setting(options.cutoff_len, set_key(config, "cutoff_len"))
    if options.template:
        note = f"chat rows encoded with LLaMA-Factory's template {options.template!r}, not the tokenizer's chat template"
    else:
        note = "no `template` key: LLaMA-Factory parses the tokenizer's chat template into its slots, and so does mldebug"
    return TrainingPlan("llama-factory", Setting(config.get("model_name_or_path"), "model_name_or_path"), Setting(None),
                        tuple(datasets), train_on, max_length, (note,) + ((v1,) if v1 else ()), framework_options=options,
                        eval_datasets=eval_datasets, eval_not_compared=_held_out(config, bool(eval_datasets)))


def _dataset(config: ConfigFile, info: dict, info_path: Path, folder: Path, name: str, key: str) -> DatasetPlan:
    """The dataset ``name`` of dataset_info.json, as the config's ``key`` (dataset, eval_dataset) names it."""
    entry = info.get(name)
    if not isinstance(entry, dict):
        raise InputError(f"{at(config, key)}: dataset {name!r} is not in {info_path}")
    if entry.get("file_name"):
        spec = str(folder / entry["file_name"])
    else:
        spec = entry.get("hf_hub_url") or entry.get("ms_hub_url") or entry.get("script_url") or name
    return DatasetPlan(spec, key, FORMATS.get(entry.get("formatting", "alpaca")), entry.get("split"), name=name)


def _held_out(config: ConfigFile, has_eval_dataset: bool) -> tuple[str, ...]:
    """LLaMA-Factory's ``val_size`` share: split off the preprocessed (encoded, filtered) rows with the run's seed."""
    size = config.get("val_size")
    if has_eval_dataset or not isinstance(size, (int, float)) or isinstance(size, bool) or size <= 0:
        return ()
    return (f"val_size: {size:g} is split off the rows LLaMA-Factory has already encoded and filtered, so which rows "
            "each side holds is not known from the input: save its split and compare it with inspect-data --eval-dataset",)


# --- preference stages (stage: dpo, stage: kto) -------------------------------------------------------------

STAGES = {"dpo": "dpo", "kto": "kto"}


def read_preference(config: ConfigFile, task: str | None, targets: versions.TargetVersions) -> PreferenceConfig | None:
    """``stage: dpo`` or ``stage: kto`` (or ``--task``), with ``cutoff_len`` as the length."""
    stage = str(config.get("stage", "sft"))
    if task is None and stage not in STAGES:
        return None
    chosen = task or STAGES[stage]
    loss = config.get("pref_loss", "sigmoid")
    trainer = f"LLaMA-Factory stage: {stage}" + (f", pref_loss: {loss}" if stage == "dpo" else "")
    length_key = "cutoff_len" if config.has("cutoff_len") else None
    max_length = Setting(positive_length(config, length_key, config.get("cutoff_len", DEFAULT_CUTOFF)),
                         length_key)
    if task is None:
        check_ranking(config, chosen, _dataset_entries(config))
    processor = "feedback processor encodes them" if chosen == "kto" else "pairwise processor encodes them"
    notes = (f"rows encoded as LLaMA-Factory's {processor} (its `template`, cutoff_len split between the prompt and "
             f"the {'reply' if chosen == 'kto' else 'longer reply'} by infer_seqlen)",)
    return PreferenceConfig(chosen, trainer, "stage" if task is None else "--task", max_length, Setting(None, None),
                            Setting((), None), (), notes)


def _dataset_entries(config: ConfigFile) -> dict[str, Any]:
    """The config's datasets as dataset_info.json describes them (read_plan has checked that they are there)."""
    names = config.get("dataset")
    names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names or [])
    info_path = resolve_dir(config, str(config.get("dataset_dir", "data"))) / "dataset_info.json"
    try:
        info = json.loads(read_text(info_path))
    except FileNotFoundError:
        raise InputError(f"{info_path} not found (dataset_dir is {config.get('dataset_dir', 'data')!r})") from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, a number too long
        raise InputError(f"{info_path}: not readable JSON ({in_one_line(exc, 200)})") from None
    if not isinstance(info, dict):
        raise InputError(f"{info_path}: expected a JSON object of datasets")
    return {name: info.get(name) for name in names}


def check_ranking(config: ConfigFile, task: str, entries: Mapping[str, Any]) -> None:
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


SETTING_KEYS = {"template": str, "default_system": str, "tool_format": str, "enable_thinking": bool,
                "preserve_thinking": bool, "train_on_prompt": bool, "mask_history": bool, "cutoff_len": int,
                "image_max_pixels": int, "image_min_pixels": int, "media_dir": str}


def lf_options(config: ConfigFile) -> LlamaFactoryOptions:
    """The DataArguments a config sets that change how rows are encoded (LLaMA-Factory's defaults otherwise)."""
    values: dict[str, Any] = {}
    for key, kind in SETTING_KEYS.items():
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InputError(f"{at(config, key)}: {key} must be {kind.__name__ if kind is not str else 'text'}, not {value!r}")
        values[key] = value
    packing = [k for k in ("packing", "neat_packing") if config.get(k) is True]
    cap = config.get("max_samples")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
        raise InputError(f"{at(config, 'max_samples')}: max_samples must be a whole number of at least 1, not {cap!r}"
                         " (below 1 it keeps no row, and LLaMA-Factory stops: Cannot find valid samples)")
    return LlamaFactoryOptions(**values, config_path=config.path, packing=tuple(packing), max_samples=cap,
                               lines={k: config.line(k) for k in (*values, *packing)})


@dataclass(frozen=True)
class LlamaFactoryOptions(Settings):
    """LLaMA-Factory's data settings from a config (or --template and the inspect flags), with where they came from."""

    config_path: str | None = None
    lines: dict[str, int | None] = field(default_factory=dict, compare=False)
    packing: tuple[str, ...] = ()  # packing keys set: rows are packed into cutoff_len blocks (not emulated per row)
    image_max_pixels: int = 768 * 768  # ModelArguments: images are shrunk to this area before the image processor
    image_min_pixels: int = 32 * 32
    media_dir: str | None = None  # DataArguments: where image paths are joined (None: the dataset's folder)
    max_samples: int | None = None  # DataArguments: _load_single_dataset keeps each file's first rows, before drops


class Rows(RowProfile):
    """LLaMA-Factory's supervised processor: its own template (by name, else parsed from the tokenizer's chat
    template), slots tokenized one by one, prompts masked (``train_on_prompt``, ``mask_history``), each
    prompt/reply pair given a share of cutoff_len (infer_seqlen); rows its converter refuses are dropped."""

    framework = "llama-factory"
    default_train_on = "assistant"
    truncation = "pairs"  # text and prompt/completion rows, which its supervised stage does not read as chats
    appends_eos = True
    own_templates = True
    reads_message_weights = False  # `llamafactory-cli train`'s converter reads role and content (v1 reads loss_weight)
    requires_assistant = False  # its converter drops a row without a reply (odd turn count, or no turn): lf_messages
    no_rows_left_stops_run = (f"LLaMA-Factory {VERSION}'s loader raises on a dataset with no row left: alone, "
                              "RuntimeError 'Cannot find valid samples'; beside other datasets, ValueError when "
                              "merging them (the features can't be aligned)")

    @property
    def first_rows(self) -> tuple[int, str] | None:
        cap = self.options.max_samples
        return None if cap is None else (cap, f"max_samples {cap}")

    def __init__(self, options: LlamaFactoryOptions, chosen: LfTemplate, tokenizer: Any, parsed: bool,
                 unemulated: str | None = None) -> None:
        from mldebug_cli.frameworks.llama_factory.data import Encoder

        self.options = options
        self.template = chosen
        self.parsed = parsed  # no template named: parsed from the tokenizer's chat template, as LLaMA-Factory does
        self.tokenizer = tokenizer
        self.unemulated = unemulated  # the named template, when it is LLaMA-Factory's but not one mldebug emulates
        self.batched = BatchTokenizer(tokenizer)
        self.encoder = Encoder(chosen, options, self.batched)
        # replace_eos: get_template_and_fix_tokenizer makes the first stop word the EOS of the tokenizer it trains
        # and saves with (Llama 3: <|eot_id|>, Phi: <|end|>)
        self.eos_is_turn_end = bool(chosen.replace_eos and chosen.stop_words)

    @property
    def masking_method(self) -> str:
        return f"llama-factory template {self.template_name} ({self._masking()})"

    @property
    def template_name(self) -> str:
        return repr(self.template.name) if not self.parsed else "parsed from the tokenizer's chat template"

    def _masking(self) -> str:
        if self.options.train_on_prompt:
            return "train_on_prompt: prompts trained too"
        if self.options.mask_history:
            return "mask_history: last reply only"
        return "replies trained, prompts masked"

    def max_length(self, given: int | None) -> int | None:
        return self.options.cutoff_len

    def train_on(self, given: str | None, row_format: str) -> str:
        if self.options.train_on_prompt:
            return "all"
        return "last" if self.options.mask_history else "assistant"

    def encodes(self, sample: Any) -> bool:
        from mldebug_cli.sources.row_formats import Chat

        return isinstance(sample, Chat)

    def encodes_pairs(self, task: str) -> bool:
        """Stage dpo (any pref_loss, orpo included) runs the pairwise processor, stage kto the feedback processor."""
        return task in ("dpo", "orpo", "kto")

    def encode_pair(self, raw: Any, task: str = "dpo") -> tuple[EncodedSide, ...]:
        """A ranking row (stage dpo/orpo) as the pairwise processor encodes it: (chosen, rejected); a KTO row (stage
        kto) as the feedback processor does: (completion,); raises InvalidRow (a RowDropped) for a row it drops,
        ValueError for one it cannot read (its run stops there)."""
        from mldebug_cli.frameworks.llama_factory.data import InvalidRow, feedback, feedback_row, pairwise, ranked_row

        if not isinstance(raw, dict):
            raise ValueError(f"the row is a JSON {type(raw).__name__}, not an object")
        eos = self.tokenizer.eos_token_id
        try:
            if task == "kto":
                return (feedback(self.encoder, *feedback_row(raw), eos),)
            return pairwise(self.encoder, ranked_row(raw), eos)
        except InvalidRow:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            kind = "feedback" if task == "kto" else "pairwise"
            raise ValueError(f"LLaMA-Factory's {kind} processor cannot read this row ({type(exc).__name__}: {exc}); "
                             "its run stops here") from None

    def pair_preparation(self, template_source: str | None, task: str = "dpo") -> PairPreparation:
        tok = self.tokenizer
        stops = {tok.eos_token_id, *(tok.convert_tokens_to_ids(w) for w in self.template.stop_words)}
        if task == "kto":
            shape = "LLaMA-Factory KTO rows (messages ending with the reply, and a true/false label)"
            how = ("feedback processor (template {}; the row encoded in one turn; the prompt and the reply share "
                   "cutoff_len by infer_seqlen; no row dropped for its length; rows its converter refuses are dropped)")
        else:
            shape = ("LLaMA-Factory ranking rows (sharegpt: conversations + chosen/rejected turns; alpaca: "
                     "instruction/input + chosen/rejected)")
            how = ("pairwise processor (template {}; each side encoded in one turn; the prompt and the longer reply "
                   "share cutoff_len by infer_seqlen, both replies cut alike; rows its converter refuses are dropped)")
        return PairPreparation(
            tok, frozenset(i for i in stops if isinstance(i, int) and i != tok.unk_token_id), self.options.cutoff_len,
            {"format": shape, "chat_template": self.chat_template_line(template_source),
             "framework": f"llama-factory {VERSION} " + how.format(self.template_name)},
            tuple(g.message for g in self._template_gaps()))

    def reads(self, sample: Any, raw: Any) -> Any:
        """A chat row the converter refuses (role order, odd turn count) raises: it never reaches training. So does
        a row whose content is a list of typed parts: the template's formatters take strings only, and the run stops."""
        from mldebug_cli.frameworks.llama_factory.data import lf_messages, typed_parts

        if self.encodes(sample):
            parts = typed_parts(raw)
            if parts is not None:
                raise ValueError(f"message {parts[0]}'s content is a list of typed parts ({', '.join(parts[1])}): "
                                 f"LLaMA-Factory {VERSION}'s template formatters take strings only and raise on it "
                                 "(TypeError, or RuntimeError 'Expected a string'): its run stops here. Typed parts "
                                 "are its v1 data format (llamafactory.v1); `llamafactory-cli train` needs each "
                                 "content as one string")
            lf_messages(sample.messages)
        return sample

    def encode(self, sample: Any, setup: Any) -> EncodedRow:
        from mldebug_cli.frameworks.llama_factory.data import lf_messages, supervise
        from mldebug_cli.render.chat import TemplateRenderError

        system, turns = lf_messages(sample.messages)
        try:
            pairs = self.encoder.pairs(system, turns, sample.tools)
        except (ValueError, KeyError, TypeError) as exc:  # the template's formatter raises: the run stops on this row
            raise TemplateRenderError(f"LLaMA-Factory's template {self.template_name} raises on this row "
                                      f"({type(exc).__name__}: {exc}); its run stops here") from None
        result = supervise(pairs, self.options, self.template, self.tokenizer.eos_token_id)
        replies = [EncodedTurn(turns[2 * n + 1].index, start, end, trained, "llama-factory template", cut)
                   for n, start, end, trained, cut in result.replies]
        return EncodedRow(result.text, result.input_ids, result.labels, result.full_length,
                          result.trained_before_truncation, result.offsets, tuple(replies), self.masking_method,
                          cut_ids=result.cut_ids, cut_labels=result.cut_labels)

    def walk_pieces(self, sample: Any, setup: Any) -> None:
        """The template's slots of the row: every text ``encode`` tokenizes (the budget split is left out)."""
        from mldebug_cli.frameworks.llama_factory.data import lf_messages

        system, turns = lf_messages(sample.messages)
        self.encoder.pairs(system, turns, sample.tools)

    def chat_template_line(self, source: str | None) -> str | None:
        if self.parsed:
            return f"{source}, cut into LLaMA-Factory template slots (parse_template)"
        return f"LLaMA-Factory's template {self.template.name!r} for chat rows (the tokenizer's is not used)"

    def not_emulated(self) -> list[NotEmulated]:
        return self._template_gaps() + [self._at(key, f"{key}: LLaMA-Factory packs rows into blocks of cutoff_len; "
                                                 "each row is shown on its own (its ids and labels are "
                                                 "LLaMA-Factory's, the packed blocks are not)")
                                        for key in self.options.packing]

    def _template_gaps(self) -> list[NotEmulated]:
        out = []
        if self.unemulated:
            out.append(self._at("template", f"template {self.unemulated!r} is LLaMA-Factory's, but mldebug does not "
                                f"emulate it; rows were encoded with the template {self.template_name}"))
        if self.template.multimodal:
            out.append(self._at("template", f"template {self.template.name!r} has a multimodal plugin: image, video "
                                "and audio placeholders are left as text, LLaMA-Factory expands them"))
        return out

    def _at(self, key: str, message: str) -> NotEmulated:
        return NotEmulated(message, key, self.options.config_path, self.options.lines.get(key))

    def describe(self) -> str:
        named = (", as LLaMA-Factory does when no template is named (name one with `template:` or --template)"
                 if self.parsed and not self.unemulated else "")
        return (f"llama-factory {VERSION} supervised processor (template {self.template_name}{named}; each slot "
                "tokenized on its own; pairs share cutoff_len by infer_seqlen)")


def row_profile(options: Any, loaded: Any, row_format: str) -> Rows:
    """LLaMA-Factory's encoding: the config's settings (or --template / --train-on / --max-length) on its template,
    with the tokenizer fixed as it fixes it (EOS replaced by the template's first stop word)."""
    from mldebug_cli.frameworks.llama_factory import templates as lft
    from mldebug_cli.frameworks.llama_factory.data import fixed_tokenizer

    given = options.framework_options if isinstance(options.framework_options, LlamaFactoryOptions) else None
    settings = given or LlamaFactoryOptions(train_on_prompt=options.train_on == "all",
                                            mask_history=options.train_on == "last")
    if options.max_length is not None:
        settings = replace(settings, cutoff_len=options.max_length)
    if getattr(options, "template", None):
        settings = replace(settings, template=options.template)
    where = f"{settings.config_path}: " if settings.config_path else ""
    unemulated = None
    try:
        chosen = lft.template(settings.template) if settings.template else None
    except lft.UnknownTemplate as exc:
        if settings.template not in lft.REGISTERED:
            raise InputError(f"{where}{exc}", hint="name one of LLaMA-Factory's templates (`template:` or --template)") from None
        chosen, unemulated = None, settings.template
    parsed = chosen is None
    if parsed and not isinstance(loaded.chat_template, str):
        chosen, parsed = lft.TEMPLATES["empty"], False  # LLaMA-Factory's placeholder when there is nothing to parse
    elif parsed:
        from jinja2 import TemplateError

        try:
            chosen = lft.parse_template(loaded.tokenizer)
        except (ValueError, TemplateError) as exc:  # LLaMA-Factory's get_template_and_fix_tokenizer raises the same
            raise InputError(f"{where}LLaMA-Factory names no template here, and it cannot parse the tokenizer's chat "
                             f"template ({type(exc).__name__}: {exc}): its run stops before training",
                             hint="name LLaMA-Factory's template for the model (`template:` in the config, or "
                                  "--template), e.g. mistral") from None
    assert chosen is not None  # named, parsed from the tokenizer, or the empty placeholder
    if settings.tool_format:
        chosen = chosen.with_tool_format(settings.tool_format)
    refused = settings.conflicts(chosen)
    if refused:
        raise InputError(f"{where}LLaMA-Factory refuses these settings: {refused}")
    return Rows(settings, chosen, fixed_tokenizer(loaded.tokenizer, chosen), parsed, unemulated)



def _vision_path(options: Any, processor: Any, folder: Any) -> VisionPath:
    """LLaMA-Factory's mm_plugin path (vision.py, which imports this module), imported when a dataset has image rows."""
    from mldebug_cli.frameworks.llama_factory.vision import vision_path

    own = options.framework_options if isinstance(options.framework_options, LlamaFactoryOptions) else None
    return vision_path(options, processor, folder, own, row_profile)

FRAMEWORK = Framework(
    name="llama-factory",
    versioned=("llamafactory", "transformers"),
    detection=Detection(rank=2, keys=frozenset({"finetuning_type", "cutoff_len", "template", "stage", "val_size",
                                               "neat_packing"}), at_least=2),
    read_spec=read_spec,
    key_schema=key_schema,
    read_plan=read_plan,
    read_preference=read_preference,
    rows=Rows,
    row_profile=row_profile,
    encodes_pairs=True,
    trainer_facts=llama_factory_trainer_facts,
    # vision.py: <image> rows through the template's mm_plugin (qwen2_vl) and the supervised processor
    vision=VisionRows(("sft",), "LLaMA-Factory's supervised stage (template qwen2_vl)",
                      _vision_path)
)
