"""LLaMA-Factory's template registry, as data: how each named template turns messages into text slots.

LLaMA-Factory (``data/template.py``, 0.9.5) does not use the tokenizer's chat template for training. A
template is a set of formatters (user, assistant, system, function call, observation, tools, prefix);
each message becomes a list of slots: text with ``{{content}}`` substituted, or the BOS/EOS token, or a
named token. Every slot's text is tokenized on its own (``tokenizer.encode(add_special_tokens=False)``),
so SentencePiece tokenizers see each piece with its own leading space. Without a ``template`` key it
parses one from the tokenizer's chat template (``parse_template``). This module knows the templates and
tool formats; ``llama_factory_encoding`` turns a conversation into ids with a real tokenizer.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

VERSION = "0.9.5"
# every name registered in llamafactory 0.9.5 (data.template.TEMPLATES); a test compares it with the installed package
REGISTERED = (
    "aeva", "alpaca", "bailing", "bailing_v2", "breeze", "chatglm3", "chatml", "chatml_de", "cohere", "cpm4",
    "dbrx", "deepseek", "deepseek3", "deepseekcoder", "deepseekr1", "default", "dots_ocr", "empty", "ernie",
    "ernie_nothink", "ernie_vl", "exaone", "falcon", "falcon_h1", "fewshot", "gemma", "gemma2", "gemma3", "gemma3n",
    "gemma4", "gemma4n", "glm4", "glm4_5v", "glm4_7", "glm4_moe", "glm4v", "glm_ocr", "glmz1", "gpt_oss",
    "granite3", "granite3_vision", "granite4", "hunyuan", "hunyuan_small", "hy3", "index", "intern2", "intern_s1",
    "intern_vl", "keye_vl", "kimi_vl", "lfm2", "lfm2_vl", "llama2", "llama2_zh", "llama3", "llama4", "llava",
    "llava_next", "llava_next_llama3", "llava_next_mistral", "llava_next_qwen", "llava_next_video",
    "llava_next_video_mistral", "llava_next_video_yi", "llava_next_yi", "mimo", "mimo_v2", "mimo_vl", "minicpm_o",
    "minicpm_v", "minicpm_v_4_6", "minimax1", "minimax2", "ministral", "ministral3", "mistral", "mistral_small",
    "mllama", "moonlight", "olmo", "openchat", "openchat-3.6", "opencoder", "paligemma", "paligemma_chat", "phi",
    "phi4", "phi4_mini", "phi_small", "pixtral", "qwen", "qwen2_audio", "qwen2_omni", "qwen2_vl", "qwen3",
    "qwen3_5", "qwen3_5_nothink", "qwen3_6", "qwen3_nothink", "qwen3_omni", "qwen3_omni_nothink", "qwen3_vl",
    "qwen3_vl_nothink", "sailor", "seed_coder", "seed_oss", "smollm", "smollm2", "solar", "starchat", "telechat2",
    "vicuna", "video_llava", "xuanyuan", "yi", "yi_vl", "youtu", "youtu_vl", "yuan", "zephyr",
)


class Special(str):
    """A slot that is a token, not text: the tokenizer's BOS or EOS (after LLaMA-Factory fixed the EOS)."""


BOS, EOS = Special("bos_token"), Special("eos_token")
Slots = tuple[str, ...]  # text with {{content}}, or BOS/EOS
THOUGHT = ("<think>\n", "\n</think>\n\n")
TOOL_CALL = ("<tool_call>", "</tool_call>")


@dataclass(frozen=True)
class LfTemplate:
    """One registered template: its formatters' slots and the rules around them."""

    name: str
    user: Slots
    assistant: Slots
    system: Slots
    function: Slots
    observation: Slots
    prefix: Slots
    tool_format: str  # how tools are described in the system slot and tool calls written (tool_utils)
    function_tool_format: str
    default_system: str = ""
    stop_words: tuple[str, ...] = ()
    thought_words: tuple[str, str] = THOUGHT
    tool_call_words: tuple[str, str] = TOOL_CALL
    efficient_eos: bool = False
    replace_eos: bool = False
    replace_jinja_template: bool = False
    kind: str = "plain"  # plain, llama2 (system fused into the first user message), reasoning (empty think blocks)
    multimodal: bool = False  # its mm_plugin rewrites image/video/audio placeholders (not emulated)

    def with_tool_format(self, tool_format: str) -> LfTemplate:
        """``tool_format`` in the config: the function slot becomes content (+EOS) and both formats switch."""
        slots = ("{{content}}",) if self.efficient_eos else ("{{content}}", EOS)
        return replace(self, function=slots, tool_format=tool_format, function_tool_format=tool_format)


TEMPLATES: dict[str, LfTemplate] = {}


def _register(name: str, *, user: Slots | None = None, assistant: Slots | None = None, system: Slots | None = None,
              function: Slots | None = None, function_format: str | None = None, observation: Slots | None = None,
              tools: str = "default", prefix: Slots = (), efficient_eos: bool = False, **rules: Any) -> None:
    """register_template's defaults: user/system plain content, assistant content+EOS unless efficient_eos,
    the function slot the assistant's, the observation slot the user's."""
    plain = ("{{content}}",)
    assistant = assistant or (plain if efficient_eos else ("{{content}}", EOS))
    TEMPLATES[name] = LfTemplate(
        name, user or plain, assistant, system or plain, function or assistant, observation or user or plain, prefix,
        tools, function_format or "default", efficient_eos=efficient_eos, **rules)


_CHATML_USER = "<|im_start|>user\n{{content}}<|im_end|>\n<|im_start|>assistant\n"
_CHATML_SYSTEM = "<|im_start|>system\n{{content}}<|im_end|>\n"
_QWEN_TOOL_RESPONSE = "<|im_start|>user\n<tool_response>\n{{content}}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
_LLAMA3_USER = ("<|start_header_id|>user<|end_header_id|>\n\n{{content}}<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n")
_GEMMA_USER = "<start_of_turn>user\n{{content}}<end_of_turn>\n<start_of_turn>model\n"
_GEMMA_TOOL = "<start_of_turn>tool\n{{content}}<end_of_turn>\n<start_of_turn>model\n"

_register("alpaca", user=("### Instruction:\n{{content}}\n\n### Response:\n",), assistant=("{{content}}", EOS, "\n\n"),
          default_system="Below is an instruction that describes a task. Write a response that appropriately "
                         "completes the request.\n\n", replace_jinja_template=True)
_register("chatml", user=(_CHATML_USER,), assistant=("{{content}}<|im_end|>\n",), system=(_CHATML_SYSTEM,),
          observation=("<|im_start|>tool\n{{content}}<|im_end|>\n<|im_start|>assistant\n",),
          stop_words=("<|im_end|>", "<|im_start|>"), replace_eos=True, replace_jinja_template=True)
_register("cohere", user=("<|START_OF_TURN_TOKEN|><|USER_TOKEN|>{{content}}<|END_OF_TURN_TOKEN|>"
                          "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",),
          system=("<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>{{content}}<|END_OF_TURN_TOKEN|>",), prefix=(BOS,))
_register("deepseek3", user=("<｜User｜>{{content}}<｜Assistant｜>",), prefix=(BOS,))
_register("deepseekr1", user=("<｜User｜>{{content}}<｜Assistant｜>",), prefix=(BOS,), kind="reasoning")
_register("default", user=("Human: {{content}}", EOS, "\nAssistant:"), assistant=("{{content}}", EOS, "\n"),
          system=("System: {{content}}", EOS, "\n"), replace_jinja_template=True)
_register("empty", assistant=("{{content}}",))
_register("gemma", user=(_GEMMA_USER,), assistant=("{{content}}<end_of_turn>\n",), system=("{{content}}\n\n",),
          observation=(_GEMMA_TOOL,), prefix=(BOS,), stop_words=("<end_of_turn>",), replace_eos=True, kind="llama2")
_register("gemma2", user=(_GEMMA_USER,), assistant=("{{content}}<end_of_turn>\n",), system=("{{content}}\n\n",),
          observation=(_GEMMA_TOOL,), prefix=(BOS,), stop_words=("<eos>", "<end_of_turn>"), efficient_eos=True,
          kind="llama2")
_register("gemma3", user=(_GEMMA_USER,), assistant=("{{content}}<end_of_turn>\n",), system=("{{content}}\n\n",),
          observation=(_GEMMA_TOOL,), prefix=(BOS,), stop_words=("<end_of_turn>",), replace_eos=True, kind="llama2",
          multimodal=True)
_register("glm4", user=("<|user|>\n{{content}}<|assistant|>",), assistant=("\n{{content}}",),
          system=("<|system|>\n{{content}}",), function=("{{content}}",), function_format="glm4",
          observation=("<|observation|>\n{{content}}<|assistant|>",), tools="glm4", prefix=("[gMASK]<sop>",),
          stop_words=("<|user|>", "<|observation|>"), efficient_eos=True)
_register("llama2", user=(BOS, "[INST] {{content}} [/INST]"), system=("<<SYS>>\n{{content}}\n<</SYS>>\n\n",),
          kind="llama2")
_register("llama3", user=(_LLAMA3_USER,), assistant=("{{content}}<|eot_id|>",),
          system=("<|start_header_id|>system<|end_header_id|>\n\n{{content}}<|eot_id|>",),
          function=("{{content}}<|eot_id|>",), function_format="llama3",
          observation=("<|start_header_id|>ipython<|end_header_id|>\n\n{{content}}<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\n",),
          tools="llama3", prefix=(BOS,), stop_words=("<|eot_id|>", "<|eom_id|>"), replace_eos=True)
_register("ministral", user=("[INST]{{content}}[/INST]",), system=("{{content}}\n\n",),
          function=("[TOOL_CALLS]{{content}}", EOS), function_format="mistral",
          observation=('[TOOL_RESULTS]{"content": {{content}}}[/TOOL_RESULTS]',), tools="mistral", prefix=(BOS,),
          kind="llama2")
_register("mistral", user=("[INST] {{content}}[/INST]",), assistant=(" {{content}}", EOS), system=("{{content}}\n\n",),
          function=("[TOOL_CALLS] {{content}}", EOS), function_format="mistral",
          observation=('[TOOL_RESULTS] {"content": {{content}}}[/TOOL_RESULTS]',), tools="mistral", prefix=(BOS,),
          kind="llama2")
_register("mistral_small", user=("[INST]{{content}}[/INST]",), system=("[SYSTEM_PROMPT]{{content}}[/SYSTEM_PROMPT]",),
          function=("[TOOL_CALLS]{{content}}", EOS), function_format="mistral",
          observation=('[TOOL_RESULTS]{"content": {{content}}}[/TOOL_RESULTS]',), tools="mistral", prefix=(BOS,),
          multimodal=True)
_register("phi", user=("<|user|>\n{{content}}<|end|>\n<|assistant|>\n",), assistant=("{{content}}<|end|>\n",),
          system=("<|system|>\n{{content}}<|end|>\n",), stop_words=("<|end|>",), replace_eos=True)
_register("phi4", user=("<|im_start|>user<|im_sep|>{{content}}<|im_end|><|im_start|>assistant<|im_sep|>",),
          assistant=("{{content}}<|im_end|>",), system=("<|im_start|>system<|im_sep|>{{content}}<|im_end|>",),
          stop_words=("<|im_end|>",), replace_eos=True)
for _name, _kind, _system in (("qwen", "plain", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."),
                              ("qwen3", "reasoning", ""), ("qwen3_nothink", "plain", "")):
    _register(_name, user=(_CHATML_USER,), assistant=("{{content}}<|im_end|>\n",), system=(_CHATML_SYSTEM,),
              function=("{{content}}<|im_end|>\n",), function_format="qwen", observation=(_QWEN_TOOL_RESPONSE,),
              tools="qwen", default_system=_system, stop_words=("<|im_end|>",), replace_eos=True, kind=_kind)
# qwen2_vl: the qwen template with its own default system and the Qwen2-VL mm_plugin (frameworks/llama_factory/vision.py)
_register("qwen2_vl", user=(_CHATML_USER,), assistant=("{{content}}<|im_end|>\n",), system=(_CHATML_SYSTEM,),
          function=("{{content}}<|im_end|>\n",), function_format="qwen", observation=(_QWEN_TOOL_RESPONSE,), tools="qwen",
          default_system="You are a helpful assistant.", stop_words=("<|im_end|>",), replace_eos=True, multimodal=True)
_register("vicuna", user=("USER: {{content}} ASSISTANT:",),
          default_system="A chat between a curious user and an artificial intelligence assistant. The assistant "
                         "gives helpful, detailed, and polite answers to the user's questions.",
          replace_jinja_template=True)


class UnknownTemplate(ValueError):
    pass


def template(name: str) -> LfTemplate:
    """A template by name; raises UnknownTemplate, telling "not emulated" from "no such template"."""
    if name in TEMPLATES:
        return TEMPLATES[name]
    close = difflib.get_close_matches(name, REGISTERED, n=4, cutoff=0.5)
    if name in REGISTERED:
        raise UnknownTemplate(f"template {name!r} is one of LLaMA-Factory's, but mldebug does not emulate it "
                              f"(it emulates {', '.join(sorted(TEMPLATES))})")
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownTemplate(f"LLaMA-Factory {VERSION} has no template {name!r}{hint}")


# --- templates parsed from a tokenizer's chat template (no `template` key) ------------------------------------

PLACEHOLDER = re.compile(r"\{\{[a-zA-Z_][a-zA-Z0-9_]*\}\}")  # what StringFormatter requires in a slot


def parse_template(tokenizer: Any) -> LfTemplate:
    """What LLaMA-Factory builds from the tokenizer's jinja when the config names no template: the prefix is what
    encoding "" decodes to; the system, user and assistant slots are cut from renders of placeholder messages; a
    default system the template inserts is found by comparing renders with and without an empty system. Raises
    ValueError where LLaMA-Factory does: a slot without a placeholder (Mistral-Nemo renders a lone system message as
    nothing), or the template's own error on a placeholder conversation."""
    def render(messages: list[dict[str, str]], generation: bool) -> str:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=generation, tokenize=False)

    prefix = tokenizer.decode(tokenizer.encode(""))
    slot = "{{content}}"
    system = render([{"role": "system", "content": slot}], False)[len(prefix):]
    user_empty_system = render([{"role": "system", "content": ""}, {"role": "user", "content": slot}], True)[len(prefix):]
    user = render([{"role": "user", "content": slot}], True)[len(prefix):]
    assistant = render([{"role": "user", "content": slot}, {"role": "assistant", "content": slot}], False)
    assistant = assistant[len(prefix) + len(user):]
    kind = "reasoning" if "<think>" in assistant else "plain"
    assistant = assistant.replace("<think>", "").replace("</think>", "").lstrip("\n")
    default_system = ""
    if len(user) > len(user_empty_system):
        default_system = _inserted(user_empty_system, user)
        user = user[len(system.replace(slot, default_system, 1)):]
    for text in (user, assistant, system):  # its StringFormatters (user, assistant, system, observation) check this
        if not PLACEHOLDER.search(text):
            raise ValueError("A placeholder is required in the string formatter.")
    return LfTemplate("(parsed from the tokenizer's chat template)", (user,), (assistant,), (system,), (assistant,),
                      (user,), (prefix,) if prefix else (), "default", "default", default_system=default_system, kind=kind)


def _inserted(short: str, long: str) -> str:
    """The characters of ``long`` skipped while matching ``short`` against it greedily (LLaMA-Factory's find_diff)."""
    i, out = 0, []
    for char in long:
        if i < len(short) and short[i] == char:
            i += 1
        else:
            out.append(char)
    return "".join(out)


# --- tool formats (tool_utils.py): the system text describing tools, and the text of an assistant's tool calls ---

DEFAULT_TOOL_PROMPT = (
    "You have access to the following tools:\n{tool_text}Use the following format if using a tool:\n```\n"
    "Action: tool name (one of [{tool_names}])\nAction Input: the input to the tool, in a JSON format representing "
    'the kwargs (e.g. ```{{"input": "hello world", "num_beams": 5}}```)\n```\n')
QWEN_TOOL_PROMPT = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
    "function signatures within <tools></tools> XML tags:\n<tools>{tool_text}\n</tools>\n\nFor each function call, "
    "return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>')
LLAMA3_TOOL_PROMPT = (
    "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\nYou have access to the following functions. To "
    "call a function, please respond with JSON for a function call. Respond in the format {{\"name\": function name, "
    "\"parameters\": dictionary of argument name and its value}}. Do not use variables.\n\n{tool_text}")
GLM4_TOOL_PROMPT = ("你是一个名为 ChatGLM 的人工智能助手。你是基于智谱 AI 公司训练的语言模型 GLM-4 模型开发的，"
                    "你的任务是针对用户的问题和要求提供适当的答复和支持。\n\n# 可用工具{tool_text}")
TOOL_FORMATS = ("default", "glm4", "llama3", "mistral", "qwen")


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("function", "") if tool.get("type") == "function" else tool


def _wrapped(tool: dict[str, Any]) -> dict[str, Any]:
    return tool if tool.get("type") == "function" else {"type": "function", "function": tool}


def _dumps(value: Any, **kwargs: Any) -> str:
    return json.dumps(value, ensure_ascii=False, **kwargs)


def describe_tools(tool_format: str, tools: list[dict[str, Any]], today: str | None = None) -> str:
    """The text a tool format appends to the system message (empty for an empty tool list)."""
    if not tools:
        return ""
    if tool_format == "qwen":
        return QWEN_TOOL_PROMPT.format(tool_text="".join("\n" + _dumps(_wrapped(t)) for t in tools))
    if tool_format == "llama3":
        text = "".join(_dumps(_wrapped(t), indent=4) + "\n\n" for t in tools)
        return LLAMA3_TOOL_PROMPT.format(date=today or datetime.now().strftime("%d %b %Y"), tool_text=text)
    if tool_format == "mistral":
        return "[AVAILABLE_TOOLS] " + _dumps([_wrapped(t) for t in tools]) + "[/AVAILABLE_TOOLS]"
    if tool_format == "glm4":
        return GLM4_TOOL_PROMPT.format(tool_text="".join(
            f"\n\n## {_function(t)['name']}\n\n{_dumps(_function(t), indent=4)}\n在调用上述函数时，请使用 Json 格式表示调用的参数。"
            for t in tools))
    return _default_tools(tools)


def _default_tools(tools: list[dict[str, Any]]) -> str:
    text, names = "", []
    for tool in map(_function, tools):
        params = tool["parameters"]
        lines = ""
        for name, param in params["properties"].items():
            required = ", required" if name in params.get("required", []) else ""
            enum = ", should be one of [{}]".format(", ".join(param["enum"])) if param.get("enum") else ""
            items = ", where each item should be {}".format(param["items"].get("type", "")) if param.get("items") else ""
            lines += f"  - {name} ({param.get('type', '')}{required}): {param.get('description', '')}{enum}{items}\n"
        text += f"> Tool Name: {tool['name']}\nTool Description: {tool.get('description', '')}\nTool Args:\n{lines}\n"
        names.append(tool["name"])
    return DEFAULT_TOOL_PROMPT.format(tool_text=text, tool_names=", ".join(names))


def write_calls(tool_format: str, calls: list[tuple[str, Any]]) -> str:
    """The assistant text of tool calls, (name, arguments) each, as the tool format writes them."""
    if tool_format == "qwen":
        return "\n".join(f"<tool_call>\n{_dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls)
    if tool_format == "llama3":
        objects = [{"name": n, "parameters": a} for n, a in calls]
        return _dumps(objects[0] if len(objects) == 1 else objects)
    if tool_format == "mistral":
        return _dumps([{"name": n, "arguments": a} for n, a in calls])
    if tool_format == "glm4":
        if len(calls) > 1:
            raise ValueError("GLM-4 does not support parallel functions")
        return f"{calls[0][0]}\n{_dumps(calls[0][1])}"
    return "\n".join(f"Action: {n}\nAction Input: {_dumps(a)}" for n, a in calls)


@dataclass(frozen=True)
class Settings:
    """The DataArguments that change how rows are encoded."""

    template: str | None = None  # None: parsed from the tokenizer's chat template
    default_system: str | None = None
    tool_format: str | None = None
    enable_thinking: bool = True
    preserve_thinking: bool = False
    train_on_prompt: bool = False
    mask_history: bool = False
    cutoff_len: int = 2048
    tool_date: str | None = None  # the date Llama 3's tool prompt carries (None: today, as LLaMA-Factory writes it)

    def conflicts(self, chosen: LfTemplate) -> str | None:
        """What LLaMA-Factory refuses before it reads a row (DataArguments and get_template_and_fix_tokenizer)."""
        if self.mask_history and self.train_on_prompt:
            return "`mask_history` is incompatible with `train_on_prompt`"
        if self.train_on_prompt and chosen.efficient_eos:
            return f"template {chosen.name!r} does not support `train_on_prompt` (it has efficient_eos)"
        if self.tool_format is not None and self.tool_format not in TOOL_FORMATS:
            return f"tool_format {self.tool_format!r} is not one mldebug emulates ({', '.join(TOOL_FORMATS)})"
        return None
