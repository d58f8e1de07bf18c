"""Unsloth: TRL's SFTTrainer, relabelled by Unsloth's ``train_on_responses_only``.

Unsloth trains through TRL's ``SFTTrainer``, so rows are rendered, tokenized and cut to ``max_length`` as in
``frameworks.trl.framework``. What differs is the masking Unsloth's notebooks apply afterwards,
``train_on_responses_only(trainer, instruction_part=..., response_part=...)`` (``unsloth_zoo.dataset_utils``): it
searches the prepared ids for the token ids of the two parts, learnt from unsloth_zoo 2026.10.9:

- Each part, tokenized alone without special tokens, is its marker (``force_match``, the default). Where the edge
  tokens of a marker change with the text that follows or precedes it, and the stable middle holds an added token,
  the edges become optional tokens, matched only when present.
- After each response marker (and its optional tokens) every token is trained up to: the EOS token (trained with
  it); a BOS, the special-token opener both markers share (``<|im_start|>``), or the next response marker (not
  trained); the next instruction marker (not trained, nor the optional tokens before it); or the end of the row.
- ``last_response_only`` trains only the last of those spans. Rows left with no trained token are dropped.

Checked row for row against the real function (tests/goldens/unsloth.py, goldens written by
tools/unsloth_goldens.py into fixtures/unsloth-2026.10.9/). Not emulated: ``mask_out_tokens``,
``force_match=False`` and parts auto-detected from the template (both parts must be given).

Unsloth's named chat templates (``get_chat_template(tokenizer, "llama-3.1")``) change more than the template: they
can map the EOS token to the template's stop word and rename tokens. ``with_named_template`` has the installed
``unsloth`` do it, in a child process (importing unsloth patches transformers and TRL), and inspects the tokenizer it
saves; mldebug does not carry Unsloth's templates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.frameworks.trl import framework as trl
from mldebug_cli.render.labels import IGNORE_INDEX, token_range
from mldebug_cli.render.truncation import Truncated

NAME = "unsloth"
TRUNCATION = "keep_start"  # SFTTrainer's, before the relabelling
PAD_MASKED_BY_ID = False  # train_on_responses_only swaps in DataCollatorForSeq2Seq, which pads labels with -100
CHECKED_VERSION = "unsloth_zoo 2026.10.9"
# characters put against a marker to see which of its edge tokens merge with neighbouring text
EDGE_PROBES = ("\\", "{", "a", "A", "1", "(", ".", "<", "}", ">")


class UnslothPartsError(ValueError):
    """Parts train_on_responses_only refuses (it raises ValueError)."""


@dataclass(frozen=True)
class ResponseParts:
    """train_on_responses_only's arguments."""

    instruction_part: str
    response_part: str
    last_response_only: bool = False

    def describe(self) -> str:
        last = ", last_response_only" if self.last_response_only else ""
        return f"instruction_part {self.instruction_part!r}, response_part {self.response_part!r}{last}"


@dataclass(frozen=True)
class Marker:
    """A part's token ids: the ``core`` that must match, and edge tokens matched when present."""

    core: tuple[int, ...]
    left: tuple[int, ...] = ()
    right: tuple[int, ...] = ()

    def at(self, ids: Sequence[int], j: int) -> bool:
        return ids[j] == self.core[0] and tuple(ids[j:j + len(self.core)]) == self.core


@dataclass(frozen=True)
class ResponseMasker:
    """train_on_responses_only resolved against one tokenizer."""

    parts: ResponseParts
    instruction: Marker
    response: Marker
    opener: tuple[int, ...]  # the special tokens both markers start with (empty when they share none)
    bos_id: int | None
    eos_id: int | None

    @classmethod
    def resolve(cls, parts: ResponseParts, tokenizer: Any) -> ResponseMasker:
        """Raises UnslothPartsError where Unsloth raises ValueError."""
        encode: Callable[[str], list[int]] = lambda text: tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
        added = {i: str(t) for i, t in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items()}
        instruction = _marker(parts.instruction_part, encode, added)
        response = _marker(parts.response_part, encode, added)
        for name, marker in (("instruction_part", instruction), ("response_part", response)):
            if not marker.core:
                raise UnslothPartsError(f"{name} {getattr(parts, name)!r} tokenizes to nothing: Unsloth cannot match it")
        response, instruction = _absorb_shared_start(response, instruction)
        specials = {i for i, t in tokenizer.added_tokens_decoder.items() if t.special} | set(tokenizer.all_special_ids)
        opener = []
        for q, a in zip(instruction.core, response.core):
            if q != a:
                break
            opener.append(q)
        if not all(i in specials for i in opener) or not any(added.get(i, "").strip() for i in opener):
            opener = []
        return cls(parts, instruction, response, tuple(opener), tokenizer.bos_token_id, tokenizer.eos_token_id)

    def describe(self) -> str:
        return f"Unsloth train_on_responses_only ({self.parts.describe()}; as {CHECKED_VERSION}'s, checked row for row)"

    def labels(self, ids: Sequence[int]) -> list[int]:
        spans = self.spans(ids)
        if self.parts.last_response_only:
            spans = spans[-1:]
        labels = [IGNORE_INDEX] * len(ids)
        for start, end in spans:
            labels[start:end] = ids[start:end]
        return labels

    def spans(self, ids: Sequence[int]) -> list[tuple[int, int]]:
        """[start, end) of every trained response, found as Unsloth's scan finds them."""
        n, j = len(ids), 0
        spans: list[tuple[int, int]] = []
        while j < n:
            if self.response.at(ids, j):
                start = _past_optional(ids, j + len(self.response.core), self.response.right)
                j = self._span_end(ids, start, spans)
            j += 1
        return spans

    def _span_end(self, ids: Sequence[int], start: int, spans: list[tuple[int, int]]) -> int:
        """Append the span opened at ``start``; return where the scan resumes (before its ``+= 1``)."""
        n, k, j = len(ids), start, start
        boundaries = {self.response.core[0], self.bos_id, self.eos_id, *self.opener[:1]} - {None}
        while j < n:
            token = ids[j]
            if token in boundaries:
                if token == self.eos_id:
                    spans.append((start, j + 1))
                    return j
                if token == self.bos_id or self._opens(ids, j) or self.response.at(ids, j):
                    spans.append((start, j))
                    return j - 1
            last = j == n - 1
            if not last and token == self.instruction.core[0]:
                k = j + len(self.instruction.core)  # Unsloth moves its cursor before comparing the whole marker
            if last or self.instruction.at(ids, j):
                j = _before_optional(ids, j, self.instruction.left)
                k = _past_optional(ids, k, self.instruction.right)
                if j == n - 1:
                    spans.append((start, n))
                    return n
                spans.append((start, j))
                return k - 1
            j += 1
        return j

    def _opens(self, ids: Sequence[int], j: int) -> bool:
        return bool(self.opener) and tuple(ids[j:j + len(self.opener)]) == self.opener

    def truncated(self, ids: list[int], max_length: int) -> Truncated:
        """TRL keeps the first ``max_length`` ids; Unsloth relabels them and drops a row left with nothing trained."""
        kept, cut = ids[:max_length], ids[max_length:]
        labels = self.labels(kept)
        dropped = all(label == IGNORE_INDEX for label in labels)
        cut_labels = self.labels(ids)[max_length:] if cut else []  # what the whole row would have trained there
        return Truncated(kept, labels, cut, cut_labels, dropped=dropped,
                         dropped_by="nothing-trained" if dropped else "length")


class Rows(trl.Rows):
    """TRL's SFTTrainer tokenization, then every row relabelled as train_on_responses_only relabels it (a row
    left with nothing trained after truncation is dropped); DataCollatorForSeq2Seq pads labels by position."""

    framework = NAME
    default_train_on = "assistant"

    masker: ResponseMasker

    @property
    def masking_method(self) -> str:
        return self.masker.describe()

    def training_template(self, loaded: Any, row_format: str, train_on: str) -> tuple[Any, None]:
        """The tokenizer's template as it is: train_on_responses_only masks after TRL's preparation, which runs
        without assistant_only_loss, so TRL neither swaps in its training template nor refuses one without markers."""
        return loaded, None

    def untrained_cause(self, row: Any) -> tuple[str, str] | None:
        ids = [*row.input_ids, *row.cut_ids]
        if self.masker.spans(ids):
            return None
        part = self.masker.parts.response_part
        return (f"the response_part {part!r} matches nowhere in the row, so train_on_responses_only trains nothing",
                "pass the exact text the template writes before each reply as --response-part (as in the rendered "
                "prompt shown)")

    def unmarked_masking(self) -> tuple[str, str]:
        return ("the chat template has no {% generation %} markers (Unsloth does not use them either); the rows were"
                " relabelled as Unsloth's train_on_responses_only relabels them: from each response marker to the EOS,"
                " the next instruction marker or the end of the row",
                "--instruction-part and --response-part decide the mask: they must match the template's role headers")

    def label(self, row: Any, encoding: Any, ids: list[int], setup: Any):
        turns = row.layout.turns if row.layout is not None else ()
        return self.masker.labels(ids), [], [token_range(encoding, t.start, t.end) for t in turns]

    def truncated(self, ids: list[int], labels: list[int], max_length: int | None, turns: list[tuple[int, int]]) -> Truncated:
        return self.masker.truncated(ids, trl.max_length(max_length))


@dataclass(frozen=True)
class Flags:
    """What Unsloth's own flags (its registry line) set: train_on_responses_only's parts and a named template."""

    parts: ResponseParts | None = None  # --instruction-part and --response-part
    template: str | None = None  # --unsloth-template: get_chat_template's name


def read_flags(given: Mapping[str, str]) -> Flags:
    """The flags given, by option; the two parts come together (\\n and \\t in them are read as escapes)."""
    instruction, response = given.get("--instruction-part"), given.get("--response-part")
    if (instruction is None) != (response is None):
        raise UsageError("give both --instruction-part and --response-part", hint="Unsloth needs both markers")
    unescape = lambda text: text.replace("\\n", "\n").replace("\\t", "\t")  # noqa: E731
    parts = ResponseParts(unescape(instruction), unescape(response)) if instruction is not None and response is not None else None
    return Flags(parts, given.get("--unsloth-template"))


def flagged_tokenizer(tokenizer: str, flags: Flags | None) -> tuple[str, dict[str, str]] | None:
    """The tokenizer ``get_chat_template(tokenizer, --unsloth-template)`` makes, and the context lines saying so."""
    if flags is None or flags.template is None:
        return None
    made = f"{tokenizer} after Unsloth's get_chat_template(tokenizer, {flags.template!r}) (its template and EOS)"
    return with_named_template(tokenizer, flags.template), {"tokenizer": made, "chat_template": f"Unsloth's {flags.template}"}


def row_profile(options: Any, loaded: Any, row_format: str) -> Rows:
    rows = Rows()
    rows.row_format = row_format  # SFTTrainer reads the rows: TRL's columns
    flags = options.framework_flags or Flags()
    rows.masker = masking(flags.parts, loaded.tokenizer, rows.train_on(options.train_on, row_format))
    return rows


def masking(parts: ResponseParts | None, tokenizer: Any, train_on: str) -> ResponseMasker:
    """The relabelling of an inspect-data run; refuses what Unsloth refuses."""
    if train_on not in ("assistant", "last", "completion"):
        raise UsageError(f"--framework unsloth trains the responses (--train-on assistant) or the last one (last), "
                         f"not {train_on}", hint="to train every token, use --framework trl")
    if parts is None:
        raise UsageError("--framework unsloth needs --instruction-part and --response-part (train_on_responses_only's "
                         "markers)", hint="e.g. --instruction-part '<|im_start|>user\\n' --response-part '<|im_start|>assistant\\n'")
    try:
        last = parts.last_response_only or train_on == "last"  # the parts' own flag, or --train-on last
        return ResponseMasker.resolve(ResponseParts(parts.instruction_part, parts.response_part, last), tokenizer)
    except UnslothPartsError as exc:
        raise UsageError(f"Unsloth refuses these parts: {exc}") from None


def _marker(text: str, encode: Callable[[str], list[int]], added: dict[int, str]) -> Marker:
    ids = encode(text)
    start, end = _stable_edges(text, ids, encode)
    if end > start and (start, end) != (0, len(ids)) and any(added.get(i, "").strip() for i in ids[start:end]):
        return Marker(tuple(ids[start:end]), tuple(ids[:start]), tuple(ids[end:]))
    return Marker(tuple(ids))


def _stable_edges(text: str, ids: list[int], encode: Callable[[str], list[int]]) -> tuple[int, int]:
    """The part of ``ids`` whose tokens stay the same whatever character touches ``text`` on either side."""
    n = len(ids)
    start, end = 0, n
    for probe in EDGE_PROBES if n else ():
        after = encode(text + probe)
        same = 0
        while same < min(n, len(after)) and after[same] == ids[same]:
            same += 1
        end = min(end, same)
        before = encode(probe + text)
        same = 0
        while same < min(n, len(before)) and before[len(before) - 1 - same] == ids[n - 1 - same]:
            same += 1
        start = max(start, n - same)
    return start, end


def _absorb_shared_start(response: Marker, instruction: Marker) -> tuple[Marker, Marker]:
    """A core cut down to the opener every role shares would match every turn: its right edge becomes required."""
    if response.core == instruction.core[:len(response.core)] and response.right:
        response = Marker(response.core + response.right, response.left)
    if instruction.core == response.core[:len(instruction.core)] and instruction.right:
        instruction = Marker(instruction.core + instruction.right, instruction.left)
    return response, instruction


def _past_optional(ids: Sequence[int], k: int, optional: tuple[int, ...]) -> int:
    for token in optional:
        if k >= len(ids) or ids[k] != token:
            break
        k += 1
    return k


def _before_optional(ids: Sequence[int], j: int, optional: tuple[int, ...]) -> int:
    for token in reversed(optional):
        if j < 1 or ids[j - 1] != token:
            break
        j -= 1
    return j


# run by the installed Python: argv = tokenizer folder, template name, output folder
_NAMED_TEMPLATE_SCRIPT = """
import sys
from transformers import AutoTokenizer
from unsloth.chat_templates import CHAT_TEMPLATES, get_chat_template
source, name, out = sys.argv[1:4]
if name not in CHAT_TEMPLATES:
    sys.exit("unknown template name %r: Unsloth's are %s" % (name, ", ".join(sorted(CHAT_TEMPLATES))))
get_chat_template(AutoTokenizer.from_pretrained(source), name).save_pretrained(out)
"""


def with_named_template(tokenizer: str, name: str) -> str:
    """A tokenizer folder as ``get_chat_template(tokenizer, name)`` of the installed unsloth leaves it."""
    import importlib.util
    import subprocess
    import sys
    import tempfile

    if importlib.util.find_spec("unsloth") is None:
        raise InputError(f"--unsloth-template {name}: needs the unsloth package, which is not installed: mldebug reads "
                         "Unsloth's templates from it", hint="pip install unsloth, or pass the template with --chat-template")
    out = tempfile.mkdtemp(prefix="mldebug-unsloth-")
    done = subprocess.run([sys.executable, "-c", _NAMED_TEMPLATE_SCRIPT, tokenizer, name, out],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError(f"--unsloth-template {name}: Unsloth's get_chat_template failed: {last}")
    return out


FRAMEWORK = Framework(
    name=NAME,
    read_plan=trl.read_plan,  # Unsloth runs TRL's SFTConfig
    rows=Rows,
    row_profile=row_profile,
    read_flags=read_flags,
    flagged_tokenizer=flagged_tokenizer,
)
