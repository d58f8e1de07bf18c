"""How a framework turns one dataset row into ``input_ids`` and ``labels``: the row half of a profile.

``RowProfile`` is the path most trainers share: render the chat template, tokenize the whole text in
one batched call (``render.labels`` maps trained character spans to tokens), truncate. A framework
module subclasses it where its trainer differs (TRL drops rows left untrained, axolotl masks with its
own turn rules and drops long rows, LLaMA-Factory splits a budget between prompt and response).

A framework with its own prompt format (LLaMA-Factory's template registry, axolotl's prompters)
overrides ``encodes``/``encode``: it returns an ``EncodedRow`` made by its own tokenization, and the
pipeline skips rendering and the shared tokenization for that row; it hands the batch's such rows to
``encode_batch``, which tokenizes their pieces in one call (``batched``). Likewise for preference rows: a framework
with its own pairwise processor (LLaMA-Factory's, stage dpo/orpo) says so in ``encodes_pairs`` and returns
each side's ids and labels from ``encode_pair``; the preference pipeline then prepares no pair as TRL does.

The inspect pipeline calls only these hooks: it holds no framework-specific branch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mldebug_cli.frameworks.batch_tokenizer import BatchTokenizer
from mldebug_cli.frameworks.subjects import NotEmulated, RowFacts
from mldebug_cli.render.chat import TemplateRenderError
from mldebug_cli.render.masking import ChatLayout, ShapeCache
from mldebug_cli.render.truncation import Truncated, truncate
from mldebug_cli.sources.row_formats import RowProblem

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup
    from mldebug_cli.render.chat import ChatRenderer
    from mldebug_cli.sources.row_formats import Sample


class RowDropped(ValueError):
    """A row the framework's data code leaves out of training (its converter refuses it; the run goes on)."""


@dataclass(frozen=True)
class EncodedTurn:
    """A trained (or masked) reply in an encoded row: token positions [start, end) in the kept ids."""

    message_index: int
    start: int
    end: int
    trained: bool
    located_by: str
    cut: bool = False  # truncation removed the end of the reply


@dataclass(frozen=True)
class EncodedSide:
    """One side (chosen or rejected) of a preference row as a framework's own pairwise processor encodes it."""

    input_ids: list[int]  # after its cut
    labels: list[int]
    prompt_length: int  # prompt tokens kept
    prompt_tokens: int  # prompt tokens before the cut
    reply_ids: list[int]  # the reply's ids before the cut (what the trainer trains)
    prompt_text: str
    reply: str  # the reply's text as the framework reads it
    label: bool | None = None  # a KTO row's label (desirable), for a framework that prepares KTO rows itself


@dataclass(frozen=True)
class PairPreparation:
    """What the preference pipeline takes from a framework that encodes the pairs itself, besides their ids."""

    tokenizer: Any  # as the framework fixes it: decodes the ids, names the EOS
    stop_ids: frozenset[int]  # the ids a trained reply should end with
    max_length: int | None  # the length the framework cuts to
    context: dict[str, str | None]  # the report's format, chat_template and framework lines
    not_emulated: tuple[str, ...] = ()  # settings whose effect on the pairs mldebug does not reproduce


@dataclass(frozen=True)
class EncodedRow:
    """A row as a framework's own data code tokenizes it (after its truncation)."""

    text: str  # what the view shows as the rendered prompt
    input_ids: list[int]
    labels: list[int]
    full_length: int  # tokens before truncation
    trained_before_truncation: int
    offsets: list[tuple[int, int]] = field(default_factory=list)  # character span of each kept token in ``text``
    turns: tuple[EncodedTurn, ...] = ()
    method: str = ""  # the masking, as the row view names it
    dropped: bool = False
    dropped_by: str = "length"
    cut_ids: list[int] = field(default_factory=list)
    cut_labels: list[int] = field(default_factory=list)


class RowProfile:
    """The shared path: chat template render, one batched tokenization, character-span labels, truncation."""

    framework = "transformers"
    default_train_on = "all"  # what the trainer trains when no masking option is given
    truncation = "keep_start"  # see render.truncation
    appends_eos = False  # EOS appended to plain text and completions
    pad_masked_by_id = False  # the collator masks labels equal to the pad id
    own_templates = False  # chat rows are encoded by the framework's own templates (no chat template needed)
    eos_is_turn_end = False  # the framework makes the template's end-of-turn the tokenizer's EOS (it saves it so)
    keeps_sharegpt_tags = False  # ShareGPT rows keep their from tags as roles
    resizes_embeddings = False  # the trainer grows the model's embeddings to len(tokenizer) (TRL's SFTTrainer does not)
    # who maps the chat template over every row before the first step without catching its error (so one row it
    # raises on stops the run), or None where a row that raises is left out or the rows are not prepared up front
    template_error_stops_run: str | None = None
    # whether the trainer reads a per-message ``loss_weight`` (None: not known, nothing is said)
    reads_message_weights: bool | None = None
    # a conversation without an assistant turn is refused by the row reader (DS010: nothing would be trained); False
    # where the framework's own reading decides what becomes of it (``reads``)
    requires_assistant = True
    # what the framework's loader raises on a dataset whose every row its reader dropped (None: the run goes on)
    no_rows_left_stops_run: str | None = None

    @property
    def first_rows(self) -> tuple[int, str] | None:
        """(N, the setting) where the loader keeps only a file's first N rows before its reader drops any
        (LLaMA-Factory's max_samples): only those can train, so only those are checked. None: every row."""
        return None

    @property
    def masking_method(self) -> str | None:
        """The context's masking line when the profile decides it (None: the generic one)."""
        return None

    def max_length(self, given: int | None) -> int | None:
        return given

    assistant_mask_needs_chat = False  # assistant-only masking refuses rows that are not conversations

    def facts(self, row_format: str) -> RowFacts:
        """What the data checks read of this profile, as plain values, for rows of ``row_format``."""
        return RowFacts(renders_chat=self.renders_chat(row_format), own_templates=self.own_templates,
                        pad_masked_by_id=self.pad_masked_by_id, unmarked_masking=self.unmarked_masking(),
                        not_emulated=tuple(self.not_emulated()), end_of_turn_hint=self.end_of_turn_hint(),
                        assistant_mask_needs_chat=self.assistant_mask_needs_chat,
                        keeps_sharegpt_tags=self.keeps_sharegpt_tags, eos_is_turn_end=self.eos_is_turn_end,
                        resizes_embeddings=self.resizes_embeddings,
                        reads_message_weights=self.reads_message_weights, framework=self.framework)

    def end_of_turn_hint(self) -> str | None:
        """How the framework's config trains an end-of-turn token the rows leave masked (None: the generic hint)."""
        return None

    def unmarked_masking(self) -> tuple[str, str] | None:
        """How the framework masks chat rows whose template has no {% generation %} markers, when it does so its own
        way: a finding's message and hint (None: by per-turn prefix renders, as mldebug does)."""
        return None

    def train_on(self, given: str | None, row_format: str) -> str:
        """What is trained: --train-on when given; prompt/completion rows train the completion by default."""
        if given is not None:
            return given
        return "completion" if row_format == "prompt-completion" else self.default_train_on

    def training_template(self, loaded: Any, row_format: str, train_on: str) -> tuple[Any, Any]:
        """The loaded tokenizer as the trainer renders with it, and the trainer's template choice (None: its own)."""
        return loaded, None

    def renders_chat(self, row_format: str) -> bool:
        """Whether rows of this format are rendered with a chat template (False: the profile's own prompter)."""
        return row_format in ("messages", "sharegpt", "alpaca")

    def own_sample(self, raw: Any) -> Sample | None:
        """The row as the framework's own prompter reads it (None: the row format's converter reads it)."""
        return None

    def refusal(self, first: Any) -> tuple[str, str] | None:
        """(what the framework raises while preparing rows like ``first``, the first row, and how to convert them):
        the run stops before training (DS027); None when it reads them."""
        return None

    def reads(self, sample: Sample, raw: Any) -> Sample:
        """The sample as the framework reads the row (raises RowDropped for a row it leaves out, ValueError for one
        it cannot read)."""
        return sample

    def encodes(self, sample: Sample) -> bool:
        """Whether ``encode`` makes this row's ids and labels itself (its own templates or prompters)."""
        return False

    def encode(self, sample: Sample, setup: Setup) -> EncodedRow:
        raise NotImplementedError

    batched: BatchTokenizer | None = None  # what ``encode`` tokenizes with, when its pieces can share one call

    def encode_batch(self, samples: list[Sample], setup: Setup) -> list[EncodedRow | RowProblem | TemplateRenderError]:
        """``encode`` of each of a batch's rows that it ``encodes`` (or the RowProblem or TemplateRenderError it
        raises): with ``batched``, every piece the rows tokenize goes through one batched tokenizer call."""

        def attempt(sample: Sample) -> EncodedRow | RowProblem | TemplateRenderError:
            try:
                return self.encode(sample, setup)
            except (RowProblem, TemplateRenderError) as exc:
                return exc

        if self.batched is None:
            return [attempt(sample) for sample in samples]
        return self.batched.encode_batch(samples, attempt, lambda sample: self.walk_pieces(sample, setup))

    def walk_pieces(self, sample: Sample, setup: Setup) -> None:
        """Make every tokenizer call ``encode`` makes for ``sample``, and no more work (the first pass of
        ``encode_batch``, whose calls see no tokens): ``encode`` itself unless the profile knows a shorter way."""
        self.encode(sample, setup)

    def encodes_pairs(self, task: str) -> bool:
        """Whether ``encode_pair`` prepares ``task``'s preference rows (dpo, orpo, ...) itself; otherwise the
        preference pipeline prepares them as TRL 1.16 does."""
        return False

    def encode_pair(self, raw: Any, task: str = "dpo") -> tuple[EncodedSide, ...]:
        """(chosen, rejected) of one raw preference row ((completion,) for KTO); raises RowDropped for a row the
        framework leaves out, ValueError for one it cannot read."""
        raise NotImplementedError

    def pair_preparation(self, template_source: str | None, task: str = "dpo") -> PairPreparation:
        """The tokenizer, stop ids, length and report lines of the pairs ``encode_pair`` makes."""
        raise NotImplementedError

    def untrained_cause(self, row: Row) -> tuple[str, str] | None:
        """(why the framework's own masking trains nothing in this row, the fix) when the profile knows (DS001)."""
        return None

    def chat_template_line(self, source: str | None) -> str | None:
        """The context's chat-template line: where the template the rows are rendered with comes from."""
        return source

    def not_emulated(self) -> list[NotEmulated]:
        """Settings of the framework that change rows in ways this profile does not reproduce."""
        return []

    def locator(self, renderer: ChatRenderer, setup: Setup) -> Any:
        """What finds the assistant turns in a render (cached per conversation shape)."""
        turn_end = setup.template_facts.end_of_turn if setup.template_facts else None
        return ShapeCache(renderer, end_texts(setup), turn_end)

    def lay_out(self, sample: Sample, setup: Setup, renderer: ChatRenderer, locator: Any) -> ChatLayout | None:
        """A chat row's layout when the profile lays it out itself (None: the generic layout)."""
        return None

    def label(self, row: Row, encoding: Any, ids: list[int], setup: Setup) -> tuple[list[int], list[int], list[tuple[int, int]]] | None:
        """(labels, straddling positions, turn token ranges) when the profile labels the row itself (None: generic)."""
        return None

    def truncated(self, ids: list[int], labels: list[int], max_length: int | None, turns: list[tuple[int, int]]) -> Truncated:
        return truncate(ids, labels, max_length, self.truncation, turns)

    def describe(self) -> str:
        """The context's framework line."""
        text = "tokenized with special tokens, EOS appended" if self.appends_eos else "tokenized with special tokens, no EOS appended"
        return f"{self.framework} (chat: rendered, tokenized without special tokens; text/completion: {text})"


def end_texts(setup: Setup) -> tuple[str, ...]:
    return tuple(t for t in (setup.eos_text,) if t)
