"""Hypothesis strategies for the differential harness: datasets in every shape mldebug reads and the messy shapes
users have (tools/differential.py draws from them with a fixed seed; the stored goldens hold what was drawn).

Rows are short (the frameworks run thousands of them on two cores), but texts may carry special-token text,
whitespace, empty strings and non-ASCII; a few rows are long, around the small ``max_length`` settings.
"""

from __future__ import annotations

import json
import string

from hypothesis import strategies as st

SPECIAL_TEXT = ("<|im_start|>", "<|im_end|>", "<|eot_id|>", "</s>", "<s>", "[INST]", "<think>", "</think>",
                "<|endoftext|>", "<tool_call>", "{{ x }}", "{% if %}")
WORDS = ("the", "chain", "is", "worn", "replace", "it", "soon", "brake", "pads", "ok", "yes", "no", "why", "how",
         "café", "naïve", "数据", "ok!", "42", "3.5")


@st.composite
def text(draw, long: bool = False) -> str:
    """A short phrase; sometimes empty, whitespace, special-token text or (long=True) ~40-120 words."""
    kind = draw(st.sampled_from(["words"] * 8 + ["empty", "space", "special", "newlines"] + (["long"] if long else [])))
    if kind == "empty":
        return ""
    if kind == "space":
        return draw(st.sampled_from([" ", "\n", "  \n\t"]))
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=80 if kind == "long" else 6))
    if kind == "long":
        words = words * 2
    out = " ".join(words)
    if kind == "special":
        out = f"{out} {draw(st.sampled_from(SPECIAL_TEXT))} {draw(st.sampled_from(WORDS))}"
    if kind == "newlines":
        out = f"\n{out}\n"
    return out


def _alnum(n: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=string.ascii_letters + string.digits, min_size=n, max_size=n)


TOOL_IDS = st.one_of(_alnum(9), st.builds(lambda s: f"call_{s}", _alnum(6)), st.just(""), _alnum(4),
                     st.builds(lambda s: f"{s}-id", _alnum(3)))
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}


@st.composite
def tool_call(draw) -> dict:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": draw(st.sampled_from(
        ["Paris", "Oslo", "数据", ""]))}}}
    if draw(st.booleans()):
        call["id"] = draw(TOOL_IDS)
    return call


@st.composite
def conversation(draw, system: bool = True, tools: bool = True, reasoning: bool = True, parts: bool = False,
                 long: bool = False) -> list[dict]:
    """A messages list: an optional system turn, 1-3 exchanges, optional tool call + result, reasoning_content."""
    messages = []
    if system and draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text())})
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(text(long=long))})
        if tools and draw(st.integers(0, 4)) == 0:
            call = draw(tool_call())
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            result = {"role": "tool", "content": draw(st.sampled_from(['{"temp": 21}', "sunny", ""]))}
            if "id" in call and draw(st.booleans()):
                result["tool_call_id"] = call["id"]
            messages.append(result)
        reply = {"role": "assistant", "content": draw(text(long=long))}
        if reasoning and draw(st.integers(0, 3)) == 0:
            reply["reasoning_content"] = draw(text())
        messages.append(reply)
    if parts:  # every message (a file that mixes strings and part lists is not one Arrow table)
        for m in messages:
            m["content"] = [{"type": "text", "text": m["content"]}]
    return messages


@st.composite
def sft_dataset(draw) -> tuple[str, list[dict]]:
    """(shape, rows) for TRL SFT / Unsloth: one shape per file, 4-10 rows."""
    shape = draw(st.sampled_from(["messages", "messages_tools", "messages_parts", "messages_long", "prompt_completion",
                                  "prompt_completion_chat", "text", "sharegpt", "alpaca", "wrong_columns"]))
    n = draw(st.integers(4, 10))
    rows: list[dict] = []
    for _ in range(n):
        if shape == "messages":
            rows.append({"messages": draw(conversation(tools=False, reasoning=False))})
        elif shape == "messages_tools":
            rows.append({"messages": draw(conversation(system=True, tools=True, reasoning=True)), "tools": [WEATHER]})
        elif shape == "messages_parts":
            rows.append({"messages": draw(conversation(tools=False, reasoning=False, parts=True))})
        elif shape == "messages_long":
            rows.append({"messages": draw(conversation(tools=False, reasoning=False, long=True))})
        elif shape == "prompt_completion":
            rows.append({"prompt": draw(text(long=True)), "completion": draw(text())})
        elif shape == "prompt_completion_chat":
            conv = draw(conversation(tools=False, reasoning=False, system=False))
            rows.append({"prompt": conv[:-1], "completion": conv[-1:]})
        elif shape == "text":
            rows.append({"text": draw(text(long=True))})
        elif shape == "sharegpt":
            human, gpt = draw(st.sampled_from([("human", "gpt"), ("user", "assistant"), ("user", "bot")]))
            conv = draw(conversation(tools=False, reasoning=False, system=False))
            rows.append({"conversations": [{"from": human if m["role"] == "user" else gpt, "value": m["content"]}
                                           for m in conv]})
        elif shape == "alpaca":
            rows.append({"instruction": draw(text()), "input": draw(text()), "output": draw(text())})
        else:
            rows.append({"question": draw(text()), "answer": draw(text())})
    return shape, rows


@st.composite
def messages_dataset(draw) -> tuple[str, list[dict]]:
    """(shape, rows) of conversational rows only (axolotl chat_template, Unsloth)."""
    shape = draw(st.sampled_from(["messages", "messages_tools", "messages_system", "messages_long"]))
    rows = []
    for _ in range(draw(st.integers(4, 10))):
        if shape == "messages_tools":
            rows.append({"messages": draw(conversation(tools=True, reasoning=True)), "tools": [WEATHER]})
        else:
            rows.append({"messages": draw(conversation(tools=False, reasoning=False, system=shape != "messages",
                                                       long=shape == "messages_long"))})
    return shape, rows


@st.composite
def preference_dataset(draw, task: str) -> tuple[str, list[dict]]:
    """(shape, rows) for DPO/ORPO (pairs), KTO (label), GRPO (prompt only); explicit and implicit prompts,
    conversational and text; a wrong-columns shape (LLaMA-Factory's ranking rows)."""
    shapes = {"dpo": ["pair_chat", "pair_text", "pair_implicit", "ranking"], "orpo": ["pair_chat", "pair_text"],
              "kto": ["kto_chat", "kto_text"], "grpo": ["grpo_chat", "grpo_text"]}[task]
    shape = draw(st.sampled_from(shapes))
    rows = []
    for _ in range(draw(st.integers(4, 10))):
        conv = draw(conversation(tools=False, reasoning=False))
        prompt, last = conv[:-1], conv[-1]
        other = {"role": "assistant", "content": draw(text(long=True))}
        if shape == "pair_chat":
            rows.append({"prompt": prompt, "chosen": [last], "rejected": [other]})
        elif shape == "pair_implicit":
            rows.append({"chosen": [*prompt, last], "rejected": [*prompt, other]})
        elif shape == "pair_text":
            rows.append({"prompt": draw(text(long=True)), "chosen": draw(text()), "rejected": draw(text(long=True))})
        elif shape == "ranking":
            rows.append({"conversations": [{"from": "human", "value": draw(text())}],
                         "chosen": {"from": "gpt", "value": draw(text())},
                         "rejected": {"from": "gpt", "value": draw(text())}})
        elif shape == "kto_chat":
            rows.append({"prompt": prompt, "completion": [last], "label": draw(st.booleans())})
        elif shape == "kto_text":
            rows.append({"prompt": draw(text(long=True)), "completion": draw(text()), "label": draw(st.booleans())})
        elif shape == "grpo_chat":
            rows.append({"prompt": prompt})
        else:
            rows.append({"prompt": draw(text(long=True))})
    return shape, rows


@st.composite
def sharegpt_dataset(draw, ranking: bool = False) -> tuple[str, list[dict]]:
    """LLaMA-Factory's ShareGPT rows (standard tags, a system field, function calls and observations) or alpaca."""
    shape = draw(st.sampled_from(["alpaca", "alpaca_history", "sharegpt", "sharegpt_tools", "sharegpt_system",
                                  "sharegpt_long"] if not ranking else ["ranking_sharegpt", "ranking_alpaca"]))
    rows = []
    for _ in range(draw(st.integers(4, 10))):
        if shape in ("alpaca", "alpaca_history", "ranking_alpaca"):
            row = {"instruction": draw(text()), "input": draw(text()), "output": draw(text())}
            if shape == "alpaca_history":
                row["history"] = [[draw(text()), draw(text())] for _ in range(draw(st.integers(0, 2)))]
            if shape == "ranking_alpaca":
                row.pop("output")
                row["chosen"], row["rejected"] = draw(text()), draw(text(long=True))
            rows.append(row)
            continue
        turns = []
        for _ in range(draw(st.integers(1, 3))):
            turns.append({"from": "human", "value": draw(text(long=shape == "sharegpt_long"))})
            if shape == "sharegpt_tools" and draw(st.booleans()):
                # arguments as an object or as a JSON string (LLaMA-Factory writes the string double-encoded)
                arguments = draw(st.sampled_from(['{"city": "Oslo"}', '"{\\"city\\": \\"Oslo\\"}"']))
                turns.append({"from": "function_call", "value": f'{{"name": "get_weather", "arguments": {arguments}}}'})
                turns.append({"from": "observation", "value": draw(st.sampled_from(['{"temp": 21}', "sunny"]))})
            turns.append({"from": "gpt", "value": draw(text(long=shape == "sharegpt_long"))})
        row = {"conversations": turns}
        if shape == "sharegpt_system":
            row["system"] = draw(text())
            if draw(st.booleans()):  # a system turn too: LLaMA-Factory takes the turn and keeps the row
                turns.insert(0, {"from": "system", "value": draw(text())})
        if shape == "sharegpt_tools":
            row["tools"] = '[{"name": "get_weather", "description": "Weather in a city", "parameters": ' \
                           '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]'
        if shape == "ranking_sharegpt":
            turns.pop()
            row["chosen"] = {"from": "gpt", "value": draw(text())}
            row["rejected"] = {"from": "gpt", "value": draw(text(long=True))}
        rows.append(row)
    return shape, rows


AXOLOTL_ROLE_NAMES = {"system": "shop", "user": "customer", "assistant": "mechanic", "tool": "tool"}


@st.composite
def axolotl_dataset(draw) -> tuple[str, list[dict]]:
    """(shape, rows) for axolotl's chat_template strategy: the messages shapes, and rows its dataset settings read
    differently: a per-message ``train`` flag (message_field_training), ``<think>`` blocks in replies
    (split_thinking), and conversations under ``dialogue`` with speaker/text keys and the shop's own role names
    (field_messages, message_property_mappings or message_field_role/content, roles); alpaca and text rows for
    its other dataset types."""
    shape = draw(st.sampled_from(["messages", "messages_tools", "messages_system", "messages_long", "messages_train",
                                  "messages_think", "dialogue_mapped", "alpaca", "text"]))
    rows = []
    for _ in range(draw(st.integers(4, 10))):
        if shape == "alpaca":  # axolotl's instruction types (alpaca and its styles, alpaca_w_system)
            rows.append({"instruction": draw(text()), "input": draw(text()), "output": draw(text()), "system": draw(text())})
            continue
        if shape == "text":  # type: completion
            rows.append({"text": draw(text(long=True))})
            continue
        if shape == "messages_tools":
            rows.append({"messages": draw(conversation(tools=True, reasoning=True)), "tools": [WEATHER]})
            continue
        messages = draw(conversation(tools=False, reasoning=False, system=shape != "messages",
                                     long=shape == "messages_long"))
        if shape == "messages_train":  # every message carries the key (one Arrow type per column)
            for m in messages:
                m["train"] = draw(st.booleans())
        elif shape == "messages_think":
            for m in messages:
                if m["role"] == "assistant" and draw(st.integers(0, 3)) > 0:
                    gap = draw(st.sampled_from(["", "\n", "\n\n"]))
                    m["content"] = f"<think>{draw(text())}</think>{gap}{m['content']}"
        if shape == "dialogue_mapped":
            rows.append({"dialogue": [{"speaker": AXOLOTL_ROLE_NAMES[m["role"]], "text": m["content"]}
                                      for m in messages]})
        else:
            rows.append({"messages": messages})
    return shape, rows


MULTI_BYTE = ("薛定谔", "数据", "🙂", "naïve café", "Ünïcödé", "定谔的猫", "ありがとう")  # characters split across tokens


@st.composite
def part_text(draw) -> str:
    """A part's text: a phrase, multi-byte text whose characters span tokens, or a phrase with a space at one edge
    (axolotl's own warning: a space before a train/mask boundary joins the next part's first token)."""
    kind = draw(st.sampled_from(["words", "words", "multi_byte", "edge_space", "empty"]))
    if kind == "multi_byte":
        return draw(st.sampled_from(MULTI_BYTE)) + draw(st.sampled_from(["", " ", "。", "\n"]))
    if kind == "empty":
        return ""
    out = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)))
    return f"{out} " if kind == "edge_space" else f" {out}" if draw(st.booleans()) else out


@st.composite
def flagged_parts(draw, key: str = "text") -> list[dict]:
    """1-3 content parts; each may carry ``train`` (a bool) and/or ``weight`` (0, 1, 0.0, 0.5), or neither."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        part: dict = {"type": "text", key: draw(part_text())}
        flag = draw(st.sampled_from(["none", "train", "weight", "both"]))
        if flag in ("train", "both"):
            part["train"] = draw(st.booleans())
        if flag in ("weight", "both"):
            part["weight"] = draw(st.sampled_from([0, 1, 0.0, 0.5]))
        parts.append(part)
    return parts


@st.composite
def axolotl_parts_dataset(draw) -> tuple[str, list[dict]]:
    """(shape, rows) for axolotl's per-part and per-message training (issue 34): content as lists of parts with
    ``train``/``weight`` flags (``text``, ``value`` or ``content`` keys), reasoning_content as flagged parts, a
    message-level ``train_detail`` of character offsets (message_field_training_detail), a message-level ``train``;
    some rows end on a user turn or hold a system turn only."""
    shape = draw(st.sampled_from(["parts_flags", "parts_value_keys", "parts_reasoning", "messages_train_detail",
                                  "parts_train_field"]))
    rows = []
    for _ in range(draw(st.integers(4, 10))):
        messages = draw(conversation(tools=False, reasoning=False, system=True))
        ending = draw(st.sampled_from(["full"] * 6 + ["user_only", "system_only"]))
        if ending == "user_only":
            messages = messages[:-1]
        elif ending == "system_only":
            messages = [{"role": "system", "content": draw(text())}]
        for m in messages:
            if shape == "messages_train_detail":
                m["content"] = draw(part_text()) + draw(part_text())
                m["train_detail"] = draw(_offsets(len(m["content"])))
                continue
            key = draw(st.sampled_from(["text", "value", "content"])) if shape == "parts_value_keys" else "text"
            m["content"] = draw(flagged_parts(key))
            if shape == "parts_reasoning" and m["role"] == "assistant" and draw(st.booleans()):
                m["reasoning_content"] = draw(flagged_parts())
            if shape == "parts_train_field":
                m["train"] = draw(st.booleans())
        rows.append({"messages": messages})
    return shape, rows


@st.composite
def _offsets(draw, length: int) -> list[dict]:
    """axolotl's train_detail: [{begin_offset, end_offset (inclusive), train}], inside the content or past it."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        begin = draw(st.integers(0, max(length, 1)))
        out.append({"begin_offset": begin, "end_offset": draw(st.integers(begin, max(length + 2, begin))),
                    "train": draw(st.booleans())})
    return out


# Tokenizers whose declared class and tokenizer.json disagree (DeepSeek-V3 declares LlamaTokenizerFast over a
# byte-level BPE file): name -> (npm tokenizer folder under fixtures/tokenizers/, tokenizer_config.json keys written
# over the folder's; {} keeps the files as shipped)
DECLARED_CLASS_VARIANTS: dict[str, tuple[str, dict]] = {
    "deepseek-v3": ("deepseek-v3", {}),
    "llama3-instruct": ("llama3-instruct", {}),
    "qwen2.5-instruct": ("qwen2.5-instruct", {}),
    "qwen2.5-as-llama": ("qwen2.5-instruct", {"tokenizer_class": "LlamaTokenizerFast"}),
    "qwen2.5-as-llama-not-legacy": ("qwen2.5-instruct", {"tokenizer_class": "LlamaTokenizer", "legacy": False}),
    "llama3-as-llama-no-prefix": ("llama3-instruct", {"tokenizer_class": "LlamaTokenizerFast", "legacy": True,
                                                      "add_prefix_space": False}),
    "deepseek-v3-as-backend": ("deepseek-v3", {"tokenizer_class": "PreTrainedTokenizerFast"}),
}


def declared_class_folder(name: str, scratch) -> object:
    """A tokenizer folder for DECLARED_CLASS_VARIANTS[name] under ``scratch`` (tokenizer.json copied: mldebug reads
    no link out of a folder; the config rewritten); returns its path."""
    import json
    import os
    import shutil
    from pathlib import Path

    source, overrides = DECLARED_CLASS_VARIANTS[name]
    origin = Path(__file__).resolve().parents[2] / "fixtures" / "tokenizers" / source
    folder = Path(scratch) / name
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "tokenizer.json").exists():
        part = folder / f"tokenizer.json.{os.getpid()}"  # whole or absent: test workers may make it at once
        shutil.copyfile(origin / "tokenizer.json", part)
        os.replace(part, folder / "tokenizer.json")
    config = json.loads((origin / "tokenizer_config.json").read_text(encoding="utf-8"))
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, **overrides}), encoding="utf-8")
    return folder


TOKENIZER_PIECES = ("saddle", "spoke", "and the chain", "数据", "定谔", "naïve café", "🙂", "42", "3.14159", "x=1;",
                    "def f():", "don't", "HTTP/2", "Ünïcödé")
SEPARATORS = (" ", "  ", "\n", "\n\n", "\t", " \n ", "", "   ")


@st.composite
def tokenizer_text(draw) -> str:
    """Text in the shapes a tokenizer's pre-tokenizer and decoder disagree on: whitespace runs, newlines, tabs,
    leading and trailing spaces, CJK, emoji, digits, code."""
    pieces = draw(st.lists(st.sampled_from(TOKENIZER_PIECES), min_size=1, max_size=6))
    gaps = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(pieces) + 1, max_size=len(pieces) + 1))
    return "".join(g + p for g, p in zip(gaps, pieces)) + gaps[-1]


def tokenizer_texts(seed: int, count: int) -> list[str]:
    """``count`` texts drawn by ``tokenizer_text`` with a fixed seed (the goldens store them)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    drawn: list[str] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(tokenizer_text())
    def collect(value):
        drawn.append(value)

    collect()
    return ["saddle\nspoke and the chain", *dict.fromkeys(drawn)][:count]


# ---------------------------------------------------------------------------------------------------- issue 34 classes
# The classes of issue 34 under TRL SFT and LLaMA-Factory (tools/differential.py suites trl-sft-classes and
# llamafactory-classes): content parts of every form with per-message weights, rows without an assistant turn, text
# whose characters span tokens, tool-call ids of every form.

TOOL_ID_FORMS = {  # shape -> the ids a file's tool calls carry (one Arrow type per file: ints and strings never mix)
    "tool_id_mistral9": _alnum(9), "tool_id_openai": st.builds(lambda s: f"call_{s}", _alnum(24)),
    "tool_id_string": st.sampled_from(["tool-1", "get_weather:0", "", "x"]), "tool_id_int": st.integers(0, 10**6),
    "tool_id_missing": st.none(),
}


@st.composite
def multi_byte_text(draw) -> str:
    """Words and multi-byte pieces (CJK, kana, emoji, accents) whose UTF-8 bytes a byte-level BPE splits across
    tokens, with or without spaces between them."""
    pieces = draw(st.lists(st.sampled_from(MULTI_BYTE + ("谁是", "物理学家", "。", "？", "，")) | st.sampled_from(WORDS),
                           min_size=1, max_size=6))
    return draw(st.sampled_from(["", " "])).join(pieces)


@st.composite
def typed_part(draw, forms: tuple[str, ...] = ("text", "value", "image", "unknown")) -> dict:
    """A content part in one of the forms users send: transformers' text, LLaMA-Factory v1's value, an image, a
    type no template knows."""
    form = draw(st.sampled_from(forms))
    if form == "image":
        return {"type": "image"}
    phrase = draw(st.one_of(text(), multi_byte_text()))
    return {"type": "text", "value": phrase} if form == "value" else {"type": "text" if form == "text" else "audio_note",
                                                                       "text": phrase}


def _weights(draw, messages: list[dict]) -> None:
    """LLaMA-Factory v1's per-message loss_weight, on every message (one Arrow type per column)."""
    for m in messages:
        m["loss_weight"] = draw(st.sampled_from([0.0, 1.0, 0.5]))


def _ending(draw, messages: list[dict]) -> list[dict]:
    """The conversation as drawn, or cut to end on its user turn, or a system turn alone."""
    kind = draw(st.sampled_from(["full", "full", "user_only", "system_only"]))
    if kind == "user_only":
        return messages[:-1]
    if kind == "system_only":
        return [{"role": "system", "content": draw(text())}]
    return messages


@st.composite
def tool_conversation(draw, ids: st.SearchStrategy) -> list[dict]:
    """A user turn, an assistant tool call (1-2 calls) with ids drawn from ``ids`` (None: no id key), the tool
    results (tool_call_id set where the call has one), the reply."""
    messages: list[dict] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text())})
    messages.append({"role": "user", "content": draw(st.one_of(text(), multi_byte_text()))})
    calls = []
    for _ in range(draw(st.integers(1, 2))):
        call: dict = {"type": "function", "function": {"name": "get_weather",
                                                       "arguments": {"city": draw(st.sampled_from(["Paris", "数据"]))}}}
        value = draw(ids)
        if value is not None:
            call["id"] = value
        calls.append(call)
    messages.append({"role": "assistant", "content": "", "tool_calls": calls})
    for call in calls:
        result = {"role": "tool", "content": draw(st.sampled_from(['{"temp": 21}', "sunny", "晴"]))}
        if "id" in call:
            result["tool_call_id"] = call["id"]
        messages.append(result)
    messages.append({"role": "assistant", "content": draw(st.one_of(text(), multi_byte_text()))})
    return messages


SFT_CLASSES_SHAPES = ("parts_forms", "parts_text_weights", "string_weights", "no_assistant", "multi_byte",
                      *TOOL_ID_FORMS)


@st.composite
def sft_classes_dataset(draw, shape: str | None = None) -> tuple[str, list[dict]]:
    """(shape, rows) for TRL SFT: typed content parts of every form (with or without per-message loss_weight),
    transformers' text parts with weights, string turns with weights, rows without an assistant turn (user-only,
    system-only), multi-byte text, tool calls with ids of every form. ``shape`` (one of SFT_CLASSES_SHAPES) fixes
    the shape; None draws one."""
    shape = shape or draw(st.sampled_from(SFT_CLASSES_SHAPES))
    rows = []
    for _ in range(draw(st.integers(4, 10))):
        if shape in TOOL_ID_FORMS:
            rows.append({"messages": draw(tool_conversation(TOOL_ID_FORMS[shape])), "tools": [WEATHER]})
            continue
        messages = draw(conversation(tools=False, reasoning=False))
        if shape == "multi_byte":
            for m in messages:
                m["content"] = draw(multi_byte_text())
        elif shape == "no_assistant":
            messages = _ending(draw, messages)
        elif shape in ("parts_forms", "parts_text_weights"):
            forms = ("text", "value", "image", "unknown") if shape == "parts_forms" else ("text",)
            for m in messages:
                m["content"] = draw(st.lists(typed_part(forms), min_size=1, max_size=2))
        if shape != "multi_byte" and shape != "no_assistant" and (shape != "parts_forms" or draw(st.booleans())):
            _weights(draw, messages)
        rows.append({"messages": messages})
    return shape, rows


@st.composite
def lf_classes_dataset(draw) -> tuple[str, list[dict]]:
    """(shape, rows) for LLaMA-Factory 0.9.5's SFT data path: OpenAI-style role/content rows with typed parts of
    every form and per-message loss_weight (LLaMA-Factory v1's demo shape) or strings with weights; ShareGPT rows
    without an assistant turn (ending on the user, a system turn alone); multi-byte text; function calls whose JSON
    carries an id of every form."""
    shape = draw(st.sampled_from(["openai_parts", "openai_weights", "sharegpt_no_assistant", "sharegpt_multi_byte",
                                  "sharegpt_tool_ids"]))
    rows = []
    for _ in range(draw(st.integers(4, 10))):
        if shape.startswith("openai"):
            messages = draw(conversation(tools=False, reasoning=False))
            if shape == "openai_parts":
                for m in messages:
                    m["content"] = draw(st.lists(typed_part(("value", "text", "image", "unknown")), min_size=1,
                                                 max_size=2))
            _weights(draw, messages)
            rows.append({"messages": messages})
            continue
        turns = []
        for _ in range(draw(st.integers(1, 3))):
            human = draw(multi_byte_text() if shape == "sharegpt_multi_byte" else text())
            turns.append({"from": "human", "value": human})
            if shape == "sharegpt_tools" or shape == "sharegpt_tool_ids":
                call: dict = {"name": "get_weather", "arguments": {"city": draw(st.sampled_from(["Oslo", "数据"]))}}
                value = draw(st.one_of(*TOOL_ID_FORMS.values()))
                if value is not None:
                    call["id"] = value
                turns.append({"from": "function_call", "value": json.dumps(call, ensure_ascii=False)})
                turns.append({"from": "observation", "value": draw(st.sampled_from(['{"temp": 21}', "晴"]))})
            turns.append({"from": "gpt", "value": draw(multi_byte_text() if shape == "sharegpt_multi_byte" else text())})
        row: dict = {"conversations": turns}
        if shape == "sharegpt_no_assistant":
            kind = draw(st.sampled_from(["full", "user_only", "system_only"]))
            if kind == "user_only":
                turns.pop()
            elif kind == "system_only":
                row["conversations"] = [{"from": "system", "value": draw(text())}]
        if shape == "sharegpt_tool_ids":
            row["tools"] = json.dumps([WEATHER["function"]])
        rows.append(row)
    return shape, rows
