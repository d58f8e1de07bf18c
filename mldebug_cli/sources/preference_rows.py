"""Preference and RL rows: which task a dataset is for, and each row as TRL's columns.

TRL's own shapes pass through: ``prompt``/``chosen``/``rejected`` (the prompt optional: implicit), ``prompt``/
``completion``/``label`` (KTO), ``prompt`` alone (GRPO), as message lists or plain text. LLaMA-Factory's shapes are
read as the same columns: ranking rows (``conversations`` + one ``chosen`` and one ``rejected`` ShareGPT turn),
v1 rows (``chosen_messages``/``rejected_messages`` with content parts), KTO rows (``messages`` + ``label`` or
``kto_tag``, the last message being the completion).
"""

from __future__ import annotations

from typing import Any

from mldebug_cli.core.registry import Code
from mldebug_cli.sources.row_formats import SHAREGPT_ROLES, RowProblem

TASK_COLUMNS = "chosen/rejected (DPO), prompt/completion/label (KTO), prompt alone (GRPO)"


def detect_task(row: dict[str, Any]) -> str | None:
    """dpo, kto or grpo from a row's columns; None for supervised rows."""
    keys = set(row)
    if {"chosen", "rejected"} <= keys or {"chosen_messages", "rejected_messages"} <= keys:
        return "dpo"
    if ("label" in keys or "kto_tag" in keys) and ({"prompt", "completion"} <= keys or "messages" in keys):
        return "kto"
    if "prompt" in keys and not keys & {"completion", "messages", "text", "conversations"}:
        return "grpo"
    return None


def to_trl_row(row: Any, task: str) -> dict[str, Any]:
    """The row's TRL columns (``prompt`` absent when implicit); raises RowProblem when it does not fit the task."""
    if not isinstance(row, dict):
        raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"row is a JSON {type(row).__name__}, not an object")
    if task == "dpo":
        return _pair(row)
    if task == "kto":
        return _unpaired(row)
    return {"prompt": _side(row, "prompt")}


def _pair(row: dict[str, Any]) -> dict[str, Any]:
    if "chosen_messages" in row:  # LLaMA-Factory v1: two whole conversations, the prompt implicit
        return {"chosen": _messages(row["chosen_messages"], "chosen_messages"),
                "rejected": _messages(row["rejected_messages"], "rejected_messages")}
    if "conversations" in row and isinstance(row.get("chosen"), dict):  # LLaMA-Factory ranking rows
        prompt = _sharegpt(row["conversations"], row.get("system"))
        return {"prompt": prompt, "chosen": _sharegpt([row["chosen"]]), "rejected": _sharegpt([row["rejected"]])}
    out = {"chosen": _side(row, "chosen"), "rejected": _side(row, "rejected")}
    if "prompt" in row:
        out["prompt"] = _side(row, "prompt")
    if isinstance(out["chosen"], str) != isinstance(out["rejected"], str):
        raise RowProblem(Code.INVALID_PREFERENCE_ROW, "chosen and rejected must both be text or both message lists")
    return out


def _unpaired(row: dict[str, Any]) -> dict[str, Any]:
    label = row.get("label", row.get("kto_tag"))
    if not isinstance(label, bool):
        raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"label is {_kind(label)}, expected true or false")
    if "messages" in row:  # LLaMA-Factory KTO rows: the last message is the completion
        messages = _messages(row["messages"], "messages")
        if len(messages) < 2 or messages[-1]["role"] != "assistant":
            raise RowProblem(Code.INVALID_PREFERENCE_ROW, "messages must end with the assistant completion after a prompt")
        return {"prompt": messages[:-1], "completion": messages[-1:], "label": label}
    prompt, completion = _side(row, "prompt"), _side(row, "completion")
    if isinstance(prompt, str) != isinstance(completion, str):
        raise RowProblem(Code.INVALID_PREFERENCE_ROW, "prompt and completion must both be text or both message lists")
    return {"prompt": prompt, "completion": completion, "label": label}


def _side(row: dict[str, Any], key: str) -> str | list[dict[str, Any]]:
    value = row.get(key)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _messages(value, key)
    raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"{key} is {_kind(value)}, expected text or a list of messages")


def _messages(value: Any, key: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"{key} is {_kind(value)}, expected a list of messages")
    out = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"{key}: message {i} is not an object with a role", i)
        content = message.get("content")
        if isinstance(content, list):  # LLaMA-Factory v1 parts: {"type": "text", "value": ...}
            if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
                raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"{key}: message {i} has content parts that are not text", i)
            content = "".join(str(p.get("value", p.get("text", ""))) for p in content)
        if content is None and message.get("tool_calls"):  # a tool-call turn: the template renders its calls
            out.append(dict(message))
            continue
        if not isinstance(content, str):
            raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"{key}: message {i} content is {_kind(content)}, expected text", i)
        out.append({**message, "content": content})  # tool_calls, tool_call_id, reasoning: the template reads them
    return out


def _sharegpt(turns: Any, system: Any = None) -> list[dict[str, Any]]:
    turns = turns if isinstance(turns, list) else [turns]
    out = [{"role": "system", "content": system}] if isinstance(system, str) and system else []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"turn {i} is not a ShareGPT turn with a text value", i)
        tag = turn.get("from")
        role = SHAREGPT_ROLES.get(tag) if isinstance(tag, str) else None
        if role is None:
            raise RowProblem(Code.INVALID_PREFERENCE_ROW, f"turn {i}: ShareGPT role {turn.get('from')!r} is not mapped to a chat role", i)
        out.append({"role": role, "content": turn["value"]})
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    return {"str": "text", "list": "a list", "dict": "an object", "bool": "a boolean"}.get(type(value).__name__, "a number")


def preference_task(head: list[Any], requested: str | None) -> str | None:
    """The task the rows are for: --task when given (sft: none), else what the first readable row's columns say."""
    if requested is not None:
        return None if requested == "sft" else requested
    first = next((r for r in head if isinstance(r, dict) and r), None)
    return detect_task(first) if first is not None else None
