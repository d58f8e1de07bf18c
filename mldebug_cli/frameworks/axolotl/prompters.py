"""axolotl's instruction prompters (axolotl 0.19.0 ``prompters.py``, ``prompt_tokenizers.py``,
``prompt_strategies/alpaca_*``, ``completion``, ``input_output``, ``user_defined``), without axolotl.

How axolotl turns an instruction row into ids and labels:

- the row's fields (instruction, input, output, and for the ``*_w_system`` types a system text) are read
  under the names the type fixes (``alpaca``: instruction/input/output; ``alpaca_chat.load_qa``:
  question/answer; the dict form ``type: {field_instruction: ..., format: ...}`` names its own);
- the prompt is a system part (``system_format`` around the system text, left out when the text is
  empty) then the turn (``format`` with an input, ``no_input_format`` without one); the style after a
  colon (``alpaca:chatml``) or the type picks these formats (instruct, chat, chatml, phi);
- the prompt is tokenized with special tokens (BOS for Llama 3 and Mistral), truncated to
  ``sequence_len``, no EOS; its labels are -100 unless ``train_on_inputs``;
- the response is tokenized on its own, with special tokens, then a leading BOS is stripped and EOS is
  appended (unless it already ends with EOS or fills ``sequence_len``); an empty response adds no token
  at all, not even EOS; the response is always trained;
- ``completion`` rows are one text, tokenized with special tokens and EOS, cut at 64 × ``sequence_len``
  and split into rows of ``sequence_len`` tokens, every token trained; ``input_output`` rows are
  segments tokenized without special tokens, each trained when its ``label`` says so;
- then, like every axolotl dataset, rows longer than ``sequence_len`` (or shorter than 2 tokens) are
  dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.registry import Code
from mldebug_cli.frameworks.rows import EncodedRow, EncodedTurn
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.render.truncation import truncate
from mldebug_cli.sources.row_formats import Chat, RowProblem

ALPACA_SYSTEM = ("Below is an instruction that describes a task, paired with an input that provides further context. "
                 "Write a response that appropriately completes the request.")
ALPACA_SYSTEM_NO_INPUT = "Below is an instruction that describes a task. Write a response that appropriately completes the request."
CHAT_SYSTEM = ("Below is an instruction from a USER that describes a task, paired with an input that provides further "
               "context. The ASSISTANT writes a response that concisely and appropriately completes the request.\n\n")
CHAT_SYSTEM_NO_INPUT = ("Below is an instruction from a USER that describes a task. The ASSISTANT writes a response that "
                        "appropriately and concisely completes the request.\n\n")

# style -> (format, no_input_format, system_format), as axolotl's PromptStyle picks them
STYLES = {
    "instruct": ("### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n",
                 "### Instruction:\n{instruction}\n\n### Response:\n", "{system}\n\n"),
    "chat": ("USER: {instruction}\n{input}\nASSISTANT:", "USER: {instruction}\nASSISTANT:", "SYSTEM: {system}\n"),
    "chatml": ("<|im_start|>user\n{instruction}\n{input}<|im_end|>\n<|im_start|>assistant\n",
               "<|im_start|>user\n{instruction}<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>system\n{system}<|im_end|>\n"),
    "phi": ("<|user|>\n{instruction}<|end|>{input}<|assistant|>", "<|user|>\n{instruction}<|end|>\n<|assistant|>\n",
            "<|system|>\n{system}<|end|>\n"),
}
OPEN_ORCA_INSTRUCT = ("### Human:\n{instruction}\n### Additional Context:\n{input}\n### Assistant:\n",
                      "### Human:\n{instruction}\n### Assistant:\n", "### System:\n{system}\n")
ALPACA_FIELDS = ("instruction", "input", "output")
COMPLETION_SPAN = 64  # completion rows are cut at 64 x sequence_len before they are split
MIN_SAMPLE_LEN = 2  # axolotl drops rows shorter than this (min_sample_len's default)


@dataclass(frozen=True)
class Prompter:
    """One instruction type: where its fields are, its formats and its fixed system prompts."""

    kind: str  # the dataset type as the config writes it
    fields: tuple[str, str | None, str]  # instruction, input (None: no input field), output
    formats: tuple[str, str, str]  # format, no_input_format, system_format
    system: tuple[str, str] = ("", "")  # fixed system text with an input, without one
    system_field: str | None = None  # the row's own system text (the *_w_system types, user_defined)
    system_required: bool = False  # axolotl raises KeyError when the row has no system field
    output_required: bool = True
    answer_prefix: str = ""  # jeopardy: "what is " before the answer

    def prompt(self, instruction: str, inp: str, system: str) -> str:
        turn, no_input, system_format = self.formats
        head = system_format.format(system=system) if system and system_format else ""
        try:
            return head + (turn.format(instruction=instruction, input=inp) if inp else no_input.format(instruction=instruction))
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"axolotl's format for type {self.kind} does not fill ({type(exc).__name__}: {exc})") from None


def prompter(kind: str, options: dict[str, Any]) -> Prompter | str | None:
    """The prompter for a dataset type; "completion"/"input_output" for those; None when mldebug does not emulate it."""
    base, _, style = kind.partition(":")
    if base == "user_defined" or options.get("format") is not None or options.get("field_instruction") is not None:
        return _user_defined(kind, options)
    if base in ("completion", "input_output"):
        return base
    if style and style not in STYLES:
        return None
    formats = STYLES[style or "instruct"]
    fixed = (ALPACA_SYSTEM, ALPACA_SYSTEM_NO_INPUT)
    chat = STYLES["chat"]
    conversation = options.get("conversation")
    table = {
        "alpaca": Prompter(kind, ("instruction", "input", "output"), formats, fixed),
        "gpteacher": Prompter(kind, ("instruction", "input", "response"), formats, fixed),
        "oasst": Prompter(kind, ("INSTRUCTION", None, "RESPONSE"), formats, fixed),
        "jeopardy": Prompter(kind, ("question", "category", "answer"), formats, fixed, answer_prefix="what is "),
        "summarizetldr": Prompter(kind, ("article", None, "summary"), (
            "USER: Summarize the following article as a TL;DR.\n{instruction}\n{input}\nASSISTANT:",
            "USER: Summarize the following article as a TL;DR.\n{instruction}\nASSISTANT:", "{system}")),
    }
    if style:
        return table.get(base)
    table.update({
        "alpaca_chat": Prompter(kind, ALPACA_FIELDS, STYLES.get(conversation, chat) if conversation else chat, fixed),
        "alpaca_chat.load_concise": Prompter(kind, ALPACA_FIELDS, chat, (CHAT_SYSTEM, CHAT_SYSTEM_NO_INPUT)),
        "alpaca_chat.load_qa": Prompter(kind, ("question", None, "answer"), chat, (CHAT_SYSTEM, CHAT_SYSTEM_NO_INPUT)),
        "alpaca_chat.load_camel_ai": Prompter(kind, ("message_1", None, "message_2"), chat, (CHAT_SYSTEM, CHAT_SYSTEM_NO_INPUT)),
        "alpaca_chat.load_no_prompt": Prompter(kind, ALPACA_FIELDS, chat),
        "alpaca_instruct": Prompter(kind, ALPACA_FIELDS, STYLES["instruct"], fixed),
        "alpaca_instruct.load_no_prompt": Prompter(kind, ALPACA_FIELDS, STYLES["instruct"]),
        "alpaca_w_system": Prompter(kind, ALPACA_FIELDS, chat, system_field="system", system_required=True),
        "alpaca_w_system.load_chat": Prompter(kind, ALPACA_FIELDS, chat, system_field="system", system_required=True),
        "alpaca_w_system.load_instruct": Prompter(kind, ALPACA_FIELDS, STYLES["instruct"], system_field="system",
                                                  system_required=True),
        "alpaca_w_system.load_open_orca": Prompter(kind, ("question", None, "response"), OPEN_ORCA_INSTRUCT,
                                                   system_field="system_prompt", system_required=True),
        "alpaca_w_system.load_open_orca_chatml": Prompter(kind, ("question", None, "response"), STYLES["chatml"],
                                                          system_field="system_prompt", system_required=True),
    })
    return table.get(kind)


def _user_defined(kind: str, options: dict[str, Any]) -> Prompter:
    """The dict form ``type: {field_instruction: ..., format: ...}`` (axolotl's UserDefinedDatasetConfig defaults)."""
    get = lambda key, default: str(options[key]) if options.get(key) is not None else default  # noqa: E731
    return Prompter(
        kind,
        (get("field_instruction", "instruction"), get("field_input", "input"), get("field_output", "output")),
        (get("format", "{instruction} {input} "), get("no_input_format", "{instruction} "), get("system_format", "{system}")),
        (get("system_prompt", ""),) * 2,
        system_field=get("field_system", "system"),
        output_required=False,
    )


@dataclass(frozen=True)
class Prompted(Chat):
    """A row as an axolotl prompter reads it; ``messages`` hold its parts for the content checks."""

    prompt: str = ""  # what the prompter writes before the response ("" for completion / input_output rows)
    response: str = ""
    segments: tuple[tuple[bool, str], ...] = ()  # input_output: (trained, text); completion: one segment
    kind: str = ""


def read(spec: Prompter | str, raw: Any, text_field: str = "text") -> Prompted:
    """The row as axolotl's prompter reads it (RowProblem where axolotl stops on it)."""
    if spec == "completion":
        return read_text(raw, text_field, spec)
    if spec == "input_output":
        return read_segments(raw, spec)
    if not isinstance(raw, dict):
        raise RowProblem(Code.INVALID_MESSAGES, f"row is a JSON {type(raw).__name__}, not an object")
    assert isinstance(spec, Prompter), spec  # the two prompter names are read above
    instruction_key, input_key, output_key = spec.fields
    if instruction_key not in raw:
        raise RowProblem(Code.INVALID_MESSAGES, f"no {instruction_key!r} field: axolotl's {spec.kind} prompter stops on this row (KeyError)")
    if spec.output_required and output_key not in raw:
        raise RowProblem(Code.INVALID_MESSAGES, f"no {output_key!r} field: axolotl's {spec.kind} prompter stops on this row (KeyError)")
    if spec.system_required and spec.system_field not in raw:
        raise RowProblem(Code.INVALID_MESSAGES, f"no {spec.system_field!r} field: axolotl's {spec.kind} prompter stops on this row (KeyError)")
    instruction, inp = _text(raw.get(instruction_key), instruction_key), _text(raw.get(input_key) if input_key else "", input_key)
    output = _text(raw.get(output_key), output_key)
    output = spec.answer_prefix + output
    system = _text(raw.get(spec.system_field), spec.system_field) if spec.system_field and spec.system_field in raw else \
        spec.system[0 if inp else 1]
    prompt = spec.prompt(instruction, inp, system)
    messages = [{"role": "system", "content": system}] if system else []
    messages += [{"role": "user", "content": text} for text in (instruction, inp) if text]
    messages.append({"role": "assistant", "content": output})
    return Prompted(messages, None, prompt, output, kind=spec.kind)


def read_text(raw: Any, key: str, kind: str) -> Prompted:
    if not isinstance(raw, dict) or not isinstance(raw.get(key), str):
        raise RowProblem(Code.INVALID_MESSAGES, f"no text field {key!r}: axolotl's {kind} type reads the row's {key!r}")
    return Prompted([{"role": "assistant", "content": raw[key]}], None, segments=((True, raw[key]),), kind=kind)


def read_segments(raw: Any, kind: str) -> Prompted:
    segments = raw.get("segments") if isinstance(raw, dict) else None
    if not isinstance(segments, list) or not all(isinstance(s, dict) and isinstance(s.get("text"), str) for s in segments):
        raise RowProblem(Code.INVALID_MESSAGES, "segments must be a list of {label, text} objects (axolotl's input_output type)")
    parts = tuple((bool(s.get("label")), s["text"]) for s in segments)
    messages = [{"role": "assistant" if trained else "user", "content": text} for trained, text in parts]
    return Prompted(messages, None, segments=parts, kind=kind)


def _text(value: Any, key: str | None) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RowProblem(Code.INVALID_MESSAGES, f"{key} is a {type(value).__name__}, expected text")
    return value


@dataclass
class _Piece:
    ids: list[int] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    text: str = ""


def _tokenize(tokenizer, text: str, limit: int, add_eos: bool, strip_bos: bool) -> _Piece:
    """axolotl's ``_tokenize``: special tokens, truncation at ``limit``, EOS appended, a leading BOS stripped."""
    if not text:
        return _Piece()
    encoded = tokenizer(text, truncation=True, max_length=limit, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), [tuple(o) for o in encoded["offset_mapping"]]
    if not ids:
        return _Piece()
    shown = text
    eos = tokenizer.eos_token_id
    if add_eos and eos is not None and ids[-1] != eos and len(ids) < limit:
        ids.append(eos)
        offsets.append((len(text), len(text) + len(tokenizer.eos_token)))
        shown = text + tokenizer.eos_token
    if strip_bos and ids[0] == tokenizer.bos_token_id:
        ids, offsets = ids[1:], offsets[1:]
    return _Piece(ids, offsets, shown)


def encode(sample: Prompted, tokenizer, sequence_len: int, train_on_inputs: bool, last_message: int) -> EncodedRow:
    """A prompted row's ids and labels as axolotl makes them, then its length filter."""
    if sample.segments and sample.kind.startswith("completion"):
        return _completion(sample, tokenizer, sequence_len)
    if sample.segments or sample.kind.startswith("input_output"):
        return _segments(sample, tokenizer, sequence_len, train_on_inputs)
    prompt = _tokenize(tokenizer, sample.prompt, sequence_len, add_eos=False, strip_bos=False)
    response = _tokenize(tokenizer, sample.response, sequence_len, add_eos=True, strip_bos=True)
    shift = len(prompt.text)
    ids = prompt.ids + response.ids
    labels = (list(prompt.ids) if train_on_inputs else [IGNORE_INDEX] * len(prompt.ids)) + list(response.ids)
    offsets = prompt.offsets + [(a + shift, b + shift) for a, b in response.offsets]
    turn = EncodedTurn(last_message, len(prompt.ids), len(ids), True, "prompter")
    method = f"axolotl {sample.kind} prompter ({'prompt trained: train_on_inputs' if train_on_inputs else 'prompt masked'})"
    return _filtered(prompt.text + response.text, ids, labels, offsets, (turn,), method, sequence_len)


def _completion(sample: Prompted, tokenizer, sequence_len: int) -> EncodedRow:
    """One text, every token trained, cut at 64 x sequence_len: axolotl splits it into rows of sequence_len."""
    piece = _tokenize(tokenizer, sample.segments[0][1], sequence_len * COMPLETION_SPAN, add_eos=True, strip_bos=False)
    chunks = -(-len(piece.ids) // sequence_len)
    method = f"axolotl completion (every token trained; {len(piece.ids)} tokens, split into {chunks} rows of sequence_len)"
    return EncodedRow(piece.text, piece.ids, list(piece.ids), len(piece.ids), len(piece.ids), piece.offsets, (), method,
                      dropped=len(piece.ids) < MIN_SAMPLE_LEN)


def _segments(sample: Prompted, tokenizer, sequence_len: int, train_on_inputs: bool) -> EncodedRow:
    ids: list[int] = []
    labels: list[int] = []
    offsets: list[tuple[int, int]] = []
    turns: list[Any] = []
    text = ""
    for k, (trained, part) in enumerate(sample.segments):
        encoded = tokenizer(part, add_special_tokens=False, return_offsets_mapping=True)
        start = len(ids)
        ids += encoded["input_ids"]
        labels += encoded["input_ids"] if trained or train_on_inputs else [IGNORE_INDEX] * len(encoded["input_ids"])
        offsets += [(a + len(text), b + len(text)) for a, b in encoded["offset_mapping"]]
        text += part
        if trained:
            turns.append(EncodedTurn(k, start, len(ids), True, "segment label"))
    return _filtered(text, ids, labels, offsets, tuple(turns), "axolotl input_output (segments trained by their label)",
                     sequence_len)


def _filtered(text: str, ids: list[int], labels: list[int], offsets, turns, method: str, sequence_len: int) -> EncodedRow:
    """axolotl's length filter (excess_length_strategy: drop): longer than sequence_len or shorter than 2 tokens."""
    trained = len(labels) - labels.count(IGNORE_INDEX)
    cut = truncate(ids, labels, sequence_len, "drop")
    return EncodedRow(text, cut.ids, cut.labels, len(ids), trained, offsets, turns, method,
                      dropped=cut.dropped or len(ids) < MIN_SAMPLE_LEN)
