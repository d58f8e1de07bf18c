"""TRL: its config classes' keys and defaults, and SFTTrainer's data semantics.

Every TRL config is a TrainingArguments subclass, so its keys are TrainingArguments' (at the target
transformers version) plus the class's own. The `trl` CLI also parses ScriptArguments,
DatasetMixtureConfig and ModelConfig from the same file. TRL's own fields come from the installed
package, else from the stored list of trl 1.16.0. Which class a config is for is read from its keys
(the class sharing the most keys of its own with the file; SFTConfig when none does).

SFTTrainer's data semantics (checked row for row against TRL 1.16.0, tests/goldens/trl.py):

- Conversations are rendered with the chat template and tokenized without special tokens; plain text and
  text prompt/completion rows get the EOS text appended (unless they end with it) and are tokenized with them.
- Labels: every token by default; ``completion_only_loss`` (on by default for prompt/completion rows) trains
  from where the tokenized prompt and the tokenized prompt+completion first differ; ``assistant_only_loss``
  trains the template's ``{% generation %}`` spans.
- ``assistant_only_loss`` with a template without ``{% generation %}`` markers: TRL swaps in its own training
  template when the tokenizer's template is one it ships (``trl/chat_templates/X.jinja`` exactly, paired with
  ``X_training.jinja``), and raises ``ValueError`` for any other template.
- ``max_length`` defaults to 1024; rows are cut to their first ``max_length`` tokens, and rows left with no
  trained token are dropped from the dataset.
- Columns: ``conversations`` of ShareGPT ``from``/``value`` turns are renamed ``role``/``content``
  (``maybe_convert_to_chatml``) with the tags kept as roles (``human``, ``gpt``: templates skip or refuse them);
  then a row is read as ``prompt``/``completion``, a ``messages`` list of role/content, or ``text``. Any other
  shape (alpaca's instruction/output, role/content messages under ``conversations``) raises ``KeyError: 'text'``
  while the dataset is prepared: the run stops before training (``sft_refusal``).
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import replace
from importlib import metadata, resources
from typing import Any

from mldebug_cli.core.registry import Code
from mldebug_cli.frameworks import record, schema, versions
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.framework import Detection, Framework, VisionPath, VisionRows
from mldebug_cli.frameworks.hf import framework as hf
from mldebug_cli.frameworks.preference_config import (
    TRL_CLASSES,
    trl_config_class,
)
from mldebug_cli.frameworks.rows import RowProfile
from mldebug_cli.frameworks.subjects import NotEmulated, TrainingTemplate
from mldebug_cli.frameworks.trl.config_classes import (
    CONFIG_CLASSES,
    GRPO_SCRIPT_CLASS,
    SCRIPT_CLASSES,
    trl_keys,
)
from mldebug_cli.frameworks.trl.plan import DEFAULT_MAX_LENGTH, TrlOptions, read_plan, read_preference
from mldebug_cli.frameworks.trl.preference import refusal
from mldebug_cli.frameworks.trl.trainer_facts import trl_trainer_facts
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.render.truncation import Truncated, truncate
from mldebug_cli.schedule.model import Packing, RunSpec
from mldebug_cli.sources.config_file import ConfigFile

NAME = "trl"
DEFAULT_LR = 2e-5
DEFAULT_LOGGING_STEPS = 10
TRUNCATION = "keep_start"  # truncation_mode keep_start, the default
ON_UNKNOWN = ("TrlParser rejects the file (unused keys are an error), and TRL's config classes raise "
              "TypeError on an unknown keyword")
PACKING_STRATEGIES = ("bfd", "bfd_split", "wrapped")


# keys TRL dropped, with the key that took their place (the releases come from the record)
REPLACED_BY = {"max_seq_length": "max_length", "torch_dtype": "dtype (transformers renamed the from_pretrained argument)"}


def key_schema(config: ConfigFile, targets: versions.TargetVersions, task: str | None = None) -> schema.KeySchema:
    """TrainingArguments' keys plus the TRL config class the file is for (``task`` names it, else the keys do),
    and the trl script's arguments."""
    own, source = trl_keys(targets)
    base = hf.training_arguments_schema(targets)
    name = trl_config_class(config.data, own, task)
    script = {**own["script"], **(own.get("grpo_script", {}) if name == "GRPOConfig" else {})}
    keys = {**own[name], **script, "env": schema.KeyType(frozenset({"dict"}))}
    renamed = record.dropped("trl", "TRL", (name, *SCRIPT_CLASSES, GRPO_SCRIPT_CLASS[0]), keys,
                             targets.version("trl") or versions.installed("trl"), REPLACED_BY)
    trl = schema.KeySchema("trl", f"{source} {name}", keys, ON_UNKNOWN, renamed=renamed)
    return trl.merged(base, source=f"{trl.source} over {base.source}")



# --- the schedule: TrainingArguments with SFTConfig's (or the preference config class's) defaults ------------

PREFERENCE_LR = 1e-6  # DPOConfig, KTOConfig, ORPOConfig and GRPOConfig (TRL 1.16)


def read_spec(config: ConfigFile, framework: str, world_size: int, targets: versions.TargetVersions,
              task: str | None = None) -> RunSpec:
    """``task``: the preference trainer (dpo, kto, orpo, grpo) when the caller knows it; the keys say it otherwise."""
    if task is None:
        task = TRL_CLASSES[trl_config_class(config.data, trl_keys(targets)[0])]
    defaults = hf.TrainerDefaults(
        learning_rate=PREFERENCE_LR if task else DEFAULT_LR,
        logging_steps=DEFAULT_LOGGING_STEPS,
        packing=_packing,
        generation=hf.grpo_batching if task == "grpo" else None,
    )
    return hf.read_spec(config, framework, world_size, targets, task, defaults)


def _packing(r: SpecReader) -> Packing:
    enabled = r.flag("packing", "packing", False)
    seq_key = "max_length" if r.has("max_length") or not r.has("max_seq_length") else "max_seq_length"
    return Packing(bool(enabled), "packing", r.integer(None, seq_key, DEFAULT_MAX_LENGTH), packs_every_row=True)


# --- SFTTrainer's data semantics ------------------------------------------------------------------------

_TRAINING_SUFFIX = "_training.jinja"
DESCRIPTION = (f"max_length {DEFAULT_MAX_LENGTH} unless given, keep_start truncation, rows left with no trained"
               " token dropped")


def max_length(given: int | None) -> int:
    """SFTConfig.max_length: what the user gave, else TRL's default."""
    return DEFAULT_MAX_LENGTH if given is None else given


def training_template(template: str, has_generation_markers: bool) -> TrainingTemplate:
    """The template TRL's SFTTrainer uses with ``assistant_only_loss=True``, picked as TRL picks it.

    TRL compares the tokenizer's template, character for character, with the originals it ships and
    returns the paired ``_training`` variant; the templates are read from the installed trl package.
    """
    if has_generation_markers:
        return TrainingTemplate("own", template)
    if importlib.util.find_spec("trl") is None:
        return TrainingTemplate("unknown")
    version = metadata.version("trl")
    folder = resources.files("trl").joinpath("chat_templates")
    for training in sorted(folder.iterdir(), key=lambda p: p.name):
        if not training.name.endswith(_TRAINING_SUFFIX):
            continue
        original = folder.joinpath(training.name.removesuffix(_TRAINING_SUFFIX) + ".jinja")
        if original.is_file() and original.read_text(encoding="utf-8") == template:
            return TrainingTemplate("swapped", training.read_text(encoding="utf-8"), training.name, original.name, version)
    return TrainingTemplate("refused", trl_version=version)


def truncated(ids: list[int], labels: list[int], max_len: int, mode: str = TRUNCATION) -> Truncated:
    """The first ``max_len`` tokens (``keep_end``: the last); then TRL filters out the rows that have no trained token
    left."""
    cut = truncate(ids, labels, max_len, mode)
    if any(label != IGNORE_INDEX for label in cut.labels):
        return cut
    return replace(cut, dropped=True, dropped_by="nothing-trained")


def sft_refusal(first: Any, row_format: str) -> tuple[str, str] | None:
    """(what SFTTrainer does instead of training rows shaped like ``first``, how to convert them); None when it reads
    them. TRL decides from the columns: input_ids (already tokenized), prompt (+ completion), a conversational
    ``messages`` (after renaming ShareGPT ``conversations``), else the ``text`` column. Each outcome was seen running
    TRL 1.16 (tests/frameworks/test_trust_claims.py)."""
    if not isinstance(first, dict) or "input_ids" in first:
        return None
    if "prompt" in first:
        return None if "completion" in first else ("raises KeyError: 'completion' while preparing the dataset",
                                                   "add a completion column")
    if _conversational(first.get("messages")) or "text" in first or is_sharegpt_conversations(first):
        return None
    columns = ", ".join(sorted(map(str, first))[:6])
    if row_format == "sharegpt" and isinstance(first.get("messages"), list):
        return ("keeps no row: it converts from/value turns only under a conversations column, and these are under "
                "messages (its prepared dataset is empty)", "rename the column to conversations and map the tags to "
                "roles, or write role/content messages")
    if row_format == "alpaca":
        how = ("convert each row to messages before SFTTrainer (user: instruction + \"\\n\" + input, assistant: output), or "
               "to prompt/completion columns")
    elif row_format == "messages":
        how = "rename the column to messages: SFTTrainer reads role/content messages only there"
    else:
        how = "give the rows a messages, prompt/completion or text column"
    return f"raises KeyError: 'text' while preparing the dataset (it reads messages, prompt/completion or text; the " \
           f"rows have {columns})", how


def is_sharegpt_conversations(row: dict) -> bool:
    """What TRL's is_conversational_from_value sees: a ``conversations`` list whose first turn has from/value."""
    turns = row.get("conversations")
    return isinstance(turns, list) and bool(turns) and isinstance(turns[0], dict) and {"from", "value"} <= set(turns[0])


def _conversational(messages: Any) -> bool:
    return isinstance(messages, list) and bool(messages) and isinstance(messages[0], dict) and "role" in messages[0]


def sharegpt_sample(raw: dict) -> Any:
    """A ShareGPT row as SFTTrainer reads it: from/value renamed role/content, the tags kept as roles, ``tools``
    JSON-decoded when a string, the row's ``system`` column ignored."""
    import json

    from mldebug_cli.sources.row_formats import Chat, RowProblem

    messages = []
    for i, turn in enumerate(raw["conversations"]):
        if not isinstance(turn, dict):
            raise RowProblem(Code.INVALID_MESSAGES, "the turn is not an object", i)
        message = {("role" if k == "from" else "content" if k == "value" else k): v for k, v in turn.items()}
        if not isinstance(message.get("role"), str):
            raise RowProblem(Code.INVALID_MESSAGES, "the turn has no 'from'", i)
        messages.append(message)
    tools = raw.get("tools")
    if isinstance(tools, str):
        try:
            tools = json.loads(tools) if tools else None
        except json.JSONDecodeError as exc:
            raise RowProblem(Code.INVALID_MESSAGES, f"tools is a string that is not valid JSON ({exc.msg}): SFTTrainer's json.loads "
                             "raises") from None
    return Chat(messages, tools or None)


def settings_refusal(options: TrlOptions, max_len: int | None) -> tuple[str, str] | None:
    """(what SFTTrainer raises for these settings, the fix); None when it accepts them (TRL 1.16)."""
    if options.packing and options.packing_strategy not in PACKING_STRATEGIES:
        return (f"raises ValueError: Invalid packing strategy {options.packing_strategy!r}",
                f"set packing_strategy to one of {', '.join(PACKING_STRATEGIES)}")
    if options.padding_free and not options.packing and max_len is not None:
        return ("raises ValueError: When `padding_free=True` without packing, `max_length` is not enforced",
                "set packing: true (packing_strategy bfd), or max_length: null")
    if options.packing and max_len is None:
        return ("raises ValueError: When packing is enabled, `max_length` can't be `None`",
                "set max_length: the length of the packed sequences")
    return None


def packed(ids: list[int], labels: list[int], max_len: int, strategy: str, padding_free: bool) -> Truncated:
    """A row as TRL 1.16's ``pack_dataset`` and padding-free collator leave it (TRL does not cut or drop rows before
    packing, and ignores truncation_mode): ``bfd`` keeps its first ``max_len`` tokens as one packed segment,
    ``bfd_split`` splits it into ``max_len`` pieces, ``wrapped`` keeps it whole in the concatenated stream. With bfd
    and bfd_split TRL is padding-free, and the collator masks the first label of every segment. A row with no token
    (a template that renders none of its turns) is left out: pack_dataset drops empty sequences."""
    if not ids:
        return Truncated([], [], [], [], dropped=True, dropped_by="nothing-trained")
    if strategy == "wrapped":
        return Truncated(list(ids), list(labels), [], [])
    if strategy == "bfd_split":
        return Truncated(list(ids), [IGNORE_INDEX if p % max_len == 0 else t for p, t in enumerate(labels)], [], [])
    return _first_label_masked(truncate(ids, labels, max_len, TRUNCATION))


def _first_label_masked(cut: Truncated) -> Truncated:
    """The padding-free collator: position 0 of a sequence is never a target."""
    return replace(cut, labels=[IGNORE_INDEX, *cut.labels[1:]]) if cut.labels else cut


class Rows(RowProfile):
    """SFTTrainer: EOS appended to text, max_length 1024 unless given, the first max_length tokens kept, rows
    left with no trained token dropped; assistant_only_loss renders with TRL's training template; ShareGPT
    conversations read with their tags as roles."""

    framework = NAME
    appends_eos = True  # its collator masks padding by position
    keeps_sharegpt_tags = True  # maybe_convert_to_chatml renames the keys, not the roles
    template_error_stops_run = "TRL's SFTTrainer renders every row in one datasets.map while it is built"
    reads_message_weights = False  # TRL 1.16's SFT code has no loss_weight (only DPOConfig.loss_weights, per loss)
    assistant_mask_needs_chat = True  # SFTTrainer: "You set `assistant_only_loss=True`, but the dataset is not conversational"
    row_format = ""

    def own_sample(self, raw: Any) -> Any:
        if self.row_format == "sharegpt" and isinstance(raw, dict) and is_sharegpt_conversations(raw):
            return sharegpt_sample(raw)
        if self.row_format == "messages" and isinstance(raw, dict):
            from mldebug_cli.sources.row_formats import conversation_as_given

            return conversation_as_given(raw)  # apply_chat_template on the whole conversation, messages as given
        return None

    def refusal(self, first: Any) -> tuple[str, str] | None:
        found = settings_refusal(self.options, self.max_length(self.given_max_length)) or sft_refusal(first, self.row_format)
        return None if found is None else (f"TRL's SFTTrainer {found[0]}", found[1])

    def __init__(self, truncation_mode: str | None = None, tokenizer: Any = None, options: TrlOptions | None = None,
                 given_max_length: int | None = None) -> None:
        self.truncation_mode = truncation_mode or TRUNCATION  # SFTConfig.truncation_mode
        self.tokenizer = tokenizer  # for the prompt alone of prompt/completion rows
        self.options = options or TrlOptions()
        self.given_max_length = given_max_length  # --max-length (wins over the config's max_length: null)

    def train_on(self, given: str | None, row_format: str) -> str:
        """completion_only_loss=False: prompt/completion rows train every token."""
        if given is None and self.options.completion_only_loss is False:
            return "all"
        return super().train_on(given, row_format)

    def label(self, row: Any, encoding: Any, ids: list[int], setup: Any) -> tuple[list[int], list[int], list[tuple[int, int]]] | None:
        """Prompt/completion rows: SFTTrainer tokenizes the prompt alone and the prompt+completion, and the completion
        starts where the two diverge (``common_prefix_length``), not where the prompt text ends: tokens that merge
        across the boundary are trained."""
        layout = row.layout
        if self.tokenizer is None or layout is None or layout.method != "completion" or setup.train_on == "all":
            return None
        from mldebug_cli.frameworks.trl.preference import common_prefix_length

        text_row = isinstance(getattr(row.sample, "prompt", None), str)
        prompt = self.tokenizer.backend_tokenizer.encode(layout.text[: layout.prompt_end], add_special_tokens=text_row).ids
        start = common_prefix_length(prompt, ids)
        labels = [IGNORE_INDEX] * start + list(ids[start:])
        return labels, [], [(start, len(ids))] * len(layout.turns)

    def max_length(self, given: int | None) -> int | None:
        return None if given is None and self.options.no_max_length else max_length(given)

    def training_template(self, loaded: Any, row_format: str, train_on: str) -> tuple[Any, TrainingTemplate | None]:
        if train_on != "assistant" or not loaded.chat_template:
            return loaded, None
        if row_format not in ("messages", "sharegpt", "alpaca", "prompt-completion"):
            return loaded, None
        from mldebug_cli.render.chat import ChatRenderer

        chosen = training_template(loaded.chat_template, ChatRenderer(loaded.chat_template, {}).has_generation_markers)
        if chosen.outcome == "swapped":
            loaded = replace(loaded, chat_template=chosen.text, template_source=chosen.describe())
        return loaded, chosen

    def truncated(self, ids: list[int], labels: list[int], max_length: int | None, turns: list[tuple[int, int]]) -> Truncated:
        options = self.options
        if options.packing and max_length is not None:
            return packed(ids, labels, max_length, options.packing_strategy, options.padding_free)
        if max_length is None:  # nothing cut, so nothing dropped: TRL filters rows only after cutting them
            cut = truncate(ids, labels, None, self.truncation_mode)
        else:
            cut = truncated(ids, labels, max_length, self.truncation_mode)
        return _first_label_masked(cut) if options.padding_free else cut

    def not_emulated(self) -> list[NotEmulated]:
        options = self.options
        if options.packing and options.packing_strategy == "wrapped" and options.padding_free:
            return [NotEmulated("padding_free with packing_strategy wrapped: the collator masks the first label of "
                                "each max_length chunk of the concatenated rows, wherever it falls in a row",
                                "padding_free")]
        return []

    def describe(self) -> str:
        options = self.options
        if options.packing:
            how = {"bfd": "each row cut to its first max_length tokens and packed whole (best fit decreasing)",
                   "bfd_split": "rows longer than max_length split into max_length pieces, packed best fit decreasing",
                   "wrapped": "rows concatenated and cut into max_length chunks across row boundaries"}
            free = "; padding-free: the first label of each packed row is -100" if options.packing_strategy != "wrapped" \
                or options.padding_free else ""
            return (f"{RowProfile.describe(self)}; packing ({options.packing_strategy}): "
                    f"{how.get(options.packing_strategy, 'unknown strategy')}, no row dropped{free}")
        extra = "; padding-free: the first label of each row is -100" if options.padding_free else ""
        if options.no_max_length and self.given_max_length is None:
            return f"{RowProfile.describe(self)}; max_length None: rows are not cut and none is dropped{extra}"
        return f"{super().describe()}; {DESCRIPTION}{extra}"


def _own_keys() -> frozenset[str]:
    """The fields of TRL's config classes at the newest recorded release that no recorded TrainingArguments has:
    ``max_length``, ``beta``, ``num_generations``, ... A config with one is for TRL."""
    newest = record.releases("trl")[-1]
    own = {k for name in CONFIG_CLASSES for k in record.fields("trl", name, newest)}
    hf_keys = {k for k in record.histories("transformers", "TrainingArguments")}
    return frozenset(own - hf_keys)


def row_profile(options: Any, loaded: Any, row_format: str) -> Rows:
    own = getattr(options, "framework_options", None)
    rows = Rows(getattr(options, "truncation_mode", None), getattr(loaded, "tokenizer", None),
                own if isinstance(own, TrlOptions) else None, getattr(options, "max_length", None))
    rows.row_format = row_format
    return rows


def _vision_path(options: Any, processor: Any, folder: Any) -> VisionPath:
    """TRL's vision path for the run's task (vision.py: SFT, vision_preference.py: DPO, vision_unpaired.py: KTO),
    imported when a dataset has image rows."""
    if options.task == "dpo":
        from mldebug_cli.frameworks.trl import vision_preference

        return vision_preference.vision_path(options, processor, folder)
    if options.task == "kto":
        from mldebug_cli.frameworks.trl import vision_unpaired

        return vision_unpaired.vision_path(options, processor, folder)
    from mldebug_cli.frameworks.trl.vision import vision_path

    return vision_path(options, processor, folder)


FRAMEWORK = Framework(
    name=NAME,
    versioned=("trl", "transformers"),
    detection=Detection(rank=3, keys=frozenset({
        "packing", "packing_strategy", "padding_free", "max_seq_length", "dataset_text_field", "completion_only_loss",
        "assistant_only_loss", "dataset_kwargs", "model_init_kwargs", "eval_packing", "chat_template_path",
        # DPOConfig, KTOConfig, ORPOConfig, GRPOConfig and the `trl grpo` script
        "beta", "loss_type", "truncation_mode", "desirable_weight", "undesirable_weight", "num_generations",
        "generation_batch_size", "steps_per_generation", "num_iterations", "reward_funcs", "max_completion_length"})
        | _own_keys()),
    read_spec=read_spec,
    key_schema=key_schema,
    read_plan=read_plan,
    read_preference=read_preference,
    rows=Rows,
    row_profile=row_profile,
    trainer_facts=trl_trainer_facts,
    pair_refusal=refusal,
    # vision.py: DataCollatorForVisionLanguageModeling; vision_preference.py: DataCollatorForVisionPreference;
    # vision_unpaired.py: DataCollatorForVisionUnpairedPreference
    vision=VisionRows(("sft", "dpo", "kto"), "TRL's SFT, DPO and KTO collators", _vision_path, {
        "grpo": "TRL 1.16's GRPOTrainer takes them (image prompts, completions generated in training, no labels to "
                "check)",
    }),
)
