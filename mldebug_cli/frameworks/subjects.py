"""What the data checks look at: the run's setup (tokenizer, template, the trainer's row handling as plain facts) and
each inspected row. Nothing here is a framework object: the pipeline keeps the framework's row profile and writes
its answers here."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.findings import Location
from mldebug_cli.render.masking import ChatLayout
from mldebug_cli.render.probe import TemplateFacts
from mldebug_cli.sources.row_formats import RowProblem, Sample

if TYPE_CHECKING:
    from mldebug_cli.frameworks.hf.tokenizer_resolution import RunTokenizer


@dataclass(frozen=True)
class NotEmulated:
    """A framework setting whose effect on rows mldebug does not reproduce (DS026), and where it is set."""

    message: str
    key: str | None = None
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class TrainingTemplate:
    """What TRL renders with under ``assistant_only_loss``, as decided from the tokenizer's template.

    ``outcome``: "own" (the template has generation markers: TRL uses it), "swapped" (TRL substitutes
    ``name`` from its package), "refused" (TRL raises ValueError), or "unknown" (trl is not installed).
    """

    outcome: str
    text: str | None = None
    name: str | None = None  # the training template's file in trl/chat_templates
    matched: str | None = None  # the shipped template the tokenizer's template equals
    trl_version: str | None = None

    def describe(self) -> str:
        return f"trl {self.trl_version} chat_templates/{self.name} (TRL swaps it in for {self.matched}: assistant_only_loss)"


@dataclass(frozen=True)
class RowFacts:
    """The trainer's row handling as plain values: what the data checks read of the framework, asked of its row
    profile once when the setup is made (the profile itself stays behind, with the pipeline)."""

    renders_chat: bool  # rows of this format are rendered with a chat template (False: the framework's own prompter)
    own_templates: bool  # chat rows are encoded by the framework's own templates
    pad_masked_by_id: bool  # the collator masks labels equal to the pad id
    unmarked_masking: tuple[str, str] | None = None  # (message, hint) when the framework masks unmarked templates its own way
    not_emulated: tuple[NotEmulated, ...] = ()  # its settings whose effect on rows mldebug does not reproduce
    end_of_turn_hint: str | None = None  # how the framework is told to train an end-of-turn token (None: the generic hint)
    assistant_mask_needs_chat: bool = False  # assistant-only masking on text rows is refused (TRL's ValueError)
    keeps_sharegpt_tags: bool = False  # ShareGPT rows keep their from tags (human, gpt) as roles
    eos_is_turn_end: bool = False  # the trained tokenizer's EOS is the template's end-of-turn (LLaMA-Factory's replace_eos)
    resizes_embeddings: bool = False  # the framework grows the model's embeddings to the tokenizer's length itself
    reads_message_weights: bool | None = None  # reads a per-message loss_weight (None: not known)
    framework: str = ""  # whose row handling these are


@dataclass(frozen=True)
class Setup:
    """The tokenizer, template and trainer behaviour every row is checked against."""

    dataset_path: str
    tokenizer_source: str
    template_source: str | None
    template_file: str | None  # the --chat-template file, when one overrides the tokenizer's template
    row_format: str
    framework: str
    train_on: str
    max_length: int | None
    bos_id: int | None
    bos_text: str | None
    eos_id: int | None
    eos_text: str | None
    pad_id: int | None
    pad_text: str | None
    end_of_turn_id: int | None  # the id of the token closing assistant turns in the template
    stop_ids: frozenset[int]  # eos, end-of-turn and generation_config eos ids
    generation_eos_ids: tuple[int, ...]
    tokenizer_adds_bos: bool
    template: str | None
    template_facts: TemplateFacts | None
    has_generation_markers: bool
    special_texts: tuple[str, ...]  # texts the tokenizer turns into special ids
    special_pattern: re.Pattern | None
    id_to_piece: Callable[[int], str]  # id -> token text
    encode: Callable[[str], list[int]]  # text -> ids without special tokens
    facts: RowFacts  # the trainer's row handling as plain values
    # (messages, tools, add_generation_prompt=False) -> rendered text, for checks that compare renders
    render: Callable[..., str] | None = None
    training_template: TrainingTemplate | None = None  # TRL's assistant_only_loss template choice
    refusal: tuple[str, str] | None = None  # (what the framework raises on these rows, how to convert): RowProfile.refusal
    text_rows: bool = False  # prompt/completion rows of plain strings (the first row's): no chat template renders them
    vocab_size: int | None = None  # ids the tokenizer knows (len(tokenizer): its vocabulary and added tokens)
    embedding_rows: int | None = None  # the model's input embedding rows (its config.json vocab_size), when known
    model_config: str | None = None  # the config.json that gave embedding_rows
    run_tokenizer: RunTokenizer | None = None  # how the run's transformers loads the tokenizer, where a release differs

    @property
    def chat(self) -> bool:
        return self.facts.renders_chat or (
            self.row_format == "prompt-completion" and self.template is not None and not self.text_rows
        )

    def location(self) -> Location:
        """A real file: the --chat-template file, else the tokenizer folder's tokenizer_config.json when it has one."""
        if self.template_file:
            return Location(path=self.template_file)
        config = Path(self.tokenizer_source) / "tokenizer_config.json"
        return Location(path=str(config) if config.exists() else self.tokenizer_source)


@dataclass
class TurnTokens:
    message_index: int
    start: int  # token positions [start, end) before truncation
    end: int
    trained: bool
    located_by: str
    prefix_preserved: bool
    cut: bool = False  # positions are in the kept ids and truncation removed the turn's end (own encodings)


@dataclass
class Row:
    """One inspected row: the sample, its rendering, tokens and labels (after truncation)."""

    index: int
    line: int | None
    path: str
    raw: Any = None
    sample: Sample | None = None
    problem: RowProblem | None = None
    render_error: str | None = None
    layout: ChatLayout | None = None
    text: str = ""
    input_ids: list[int] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    encoding: Any = None  # the fast tokenizer's Encoding (offsets are read from it only when needed)
    full_length: int = 0  # tokens before truncation
    trained: int = 0  # trained labels after truncation
    trained_before_truncation: int = 0
    first_trained: int | None = None  # position of the first trained token before truncation
    turns: list[TurnTokens] = field(default_factory=list)
    straddles: list[int] = field(default_factory=list)
    appended_eos: bool = False
    dropped: bool = False  # the trainer leaves the row out of training
    dropped_by: str = "length"  # why: "length" (longer than the max length) or "nothing-trained" (after truncation)
    cut_ids: list[int] = field(default_factory=list)  # what truncation removed
    cut_labels: list[int] = field(default_factory=list)
    encoded: bool = False  # ids and labels came from the framework's own encoding (RowProfile.encode)
    masking: str | None = None  # the masking the framework's own encoding used
    untrained_cause: tuple[str, str] | None = None  # (why the framework's masking trains nothing here, the fix), if it knows
    _offsets: list[tuple[int, int]] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.problem is None and self.render_error is None

    @property
    def messages(self) -> list[dict[str, Any]]:
        from mldebug_cli.sources.row_formats import Chat, PromptCompletion

        if isinstance(self.sample, Chat):
            return self.sample.messages
        if isinstance(self.sample, PromptCompletion) and isinstance(self.sample.prompt, list):
            return self.sample.prompt + (self.sample.completion if isinstance(self.sample.completion, list) else [])
        return []

    @property
    def offsets(self) -> list[tuple[int, int]]:
        """Character span of each kept token in ``text`` (empty for pre-tokenized rows)."""
        if self._offsets is None:
            if self.encoding is None:
                return []
            self._offsets = self.encoding.offsets[: len(self.input_ids)]
        return self._offsets

    @property
    def truncated(self) -> bool:
        return self.full_length > len(self.input_ids)

    @property
    def last_id_before_truncation(self) -> int | None:
        ids = self.cut_ids or self.input_ids
        return ids[-1] if ids else None

    def location(self, message_index: int | None = None) -> Location:
        return Location(path=self.path, row=self.index, line=self.line, message_index=message_index)
