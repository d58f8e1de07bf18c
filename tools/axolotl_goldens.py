"""Write fixtures/axolotl-0.19.0/: real axolotl 0.19.0 input_ids and labels for a few real conversations.

Not run in CI (axolotl is not a dependency): tests/render/test_axolotl.py reads what this wrote and
checks that `mldebug inspect-data --framework axolotl` gives the same ids and labels.

Usage (axolotl's wheel unpacked, not installed: its dependencies are mostly not needed here):

    pip download axolotl==0.19.0 --no-deps -d /tmp/axo/dl
    python -m zipfile -e /tmp/axo/dl/axolotl-0.19.0-py3-none-any.whl /tmp/axo/whl
    python tools/axolotl_goldens.py --wheel /tmp/axo/whl

It runs axolotl's own ``chat_template`` strategy (``prompt_strategies.chat_template.load``, then
``tokenize_prompt``) with axolotl's defaults, and with ``train_on_inputs: true``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
OUT = FIXTURES / "axolotl-0.19.0"
TOKENIZERS = ("qwen2.5-instruct", "qwen3", "phi-3-mini-instruct", "mistral-nemo-instruct")
# name -> (axolotl cfg keys, the inspect-data flags that ask for the same)
SETTINGS = {"defaults": ({}, []), "train_on_inputs": ({"train_on_inputs": True}, ["--train-on", "all"])}
SYSTEM = "You are a helpful assistant."  # the one text not taken from a fixture


def conversations() -> list[dict]:
    """Small real rows from fixtures/datasets, as chat_template `messages` rows (what each exercises in the comment)."""
    datasets = FIXTURES / "datasets"
    glaive = json.loads((datasets / "llama-factory" / "glaive_toolcall_en_demo.json").read_text())
    alpaca = json.loads((datasets / "llama-factory" / "alpaca_en_demo.json").read_text())
    missing = json.loads((datasets / "axolotl" / "conversation.missingturns.json").read_text())
    return [
        {"messages": _sharegpt(glaive[123]["conversations"][:4])},  # multi-turn
        {"messages": [{"role": "system", "content": SYSTEM}, *_alpaca(alpaca[362]), *_alpaca(alpaca[91])]},  # a system message
        {"messages": _sharegpt(missing["conversations"][:4])},  # an empty assistant turn
        {"messages": [*_alpaca(alpaca[554]), *_alpaca(alpaca[661])]},  # user content with an input block
        _tool_row(glaive[119]),  # a tool call and its result
        {"messages": [*_thinking(alpaca[398]), *_thinking(alpaca[362])]},  # <think> blocks the Qwen3 template rewrites
        {"system": SYSTEM, "messages": _alpaca(alpaca[91])},  # a row-level system field: axolotl prepends it
        {"system": "", "messages": _alpaca(alpaca[554])},  # an empty one (Qwen2.5 then drops its default system prompt)
        {"messages": _parts(_alpaca(alpaca[661]))},  # content as a list of text parts: axolotl joins them
        _tool_row(glaive[119], string_arguments=True),  # tool-call arguments as a JSON string: axolotl parses them
    ]


def _parts(messages: list[dict]) -> list[dict]:
    """Each content as two text parts, split before a space near its middle."""
    out = []
    for m in messages:
        text = m["content"]
        cut = text.find(" ", len(text) // 2)
        cut = cut if cut > 0 else len(text)
        out.append({**m, "content": [{"type": "text", "text": text[:cut]}, {"type": "text", "text": text[cut:]}]})
    return out


def _alpaca(row: dict) -> list[dict]:
    user = row["instruction"] + ("\n" + row["input"] if row["input"] else "")
    return [{"role": "user", "content": user}, {"role": "assistant", "content": row["output"]}]


def _thinking(row: dict) -> list[dict]:
    user, answer = _alpaca(row)
    return [user, {"role": "assistant", "content": f"<think>\n{row['instruction']}\n</think>\n\n{answer['content']}"}]


def _sharegpt(turns: list[dict]) -> list[dict]:
    roles = {"human": "user", "gpt": "assistant", "observation": "tool"}
    return [{"role": roles[t["from"]], "content": t["value"]} for t in turns]


def _tool_row(row: dict, string_arguments: bool = False) -> dict:
    """LLaMA-Factory's function_call/observation turns as OpenAI tool_calls and tool messages."""
    messages = []
    for turn in row["conversations"]:
        if turn["from"] == "function_call":
            call = json.loads(turn["value"])
            arguments = json.dumps(call["arguments"]) if string_arguments else call["arguments"]
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": call["name"], "arguments": arguments}}]})
        else:
            messages += _sharegpt([turn])
    return {"messages": messages, "tools": [{"type": "function", "function": f} for f in json.loads(row["tools"])]}


def load_axolotl(wheel: Path):
    """axolotl's chat_template module from the unpacked wheel (``addict``, imported but unused here, stubbed)."""
    sys.path.insert(0, str(wheel))
    if "addict" not in sys.modules:
        addict = types.ModuleType("addict")
        addict.Dict = type("Dict", (dict,), {"__getattr__": dict.get})
        sys.modules["addict"] = addict
    from axolotl.prompt_strategies import chat_template
    from axolotl.utils.dict import DictDefault

    return chat_template, DictDefault


def goldens(wheel: Path) -> None:
    import transformers
    from transformers import AutoTokenizer

    chat_template, DictDefault = load_axolotl(wheel)
    logging.disable(logging.WARNING)
    rows = conversations()
    OUT.mkdir(exist_ok=True)
    (OUT / "conversations.json").write_text(_rows_json(rows), encoding="utf-8")
    for name in TOKENIZERS:
        folder = FIXTURES / "tokenizers" / name
        for setting, (cfg_keys, flags) in SETTINGS.items():
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            cfg = DictDefault({"sequence_len": 100_000, "train_on_inputs": False, **cfg_keys})
            strategy = chat_template.load(tokenizer, cfg, DictDefault({"type": "chat_template"}))
            out = []
            for i, row in enumerate(rows):
                try:
                    result = strategy.tokenize_prompt(json.loads(json.dumps(row)))
                except Exception as exc:  # the template refuses the row: axolotl stops there
                    out.append({"row": i, "error": f"{type(exc).__name__}: {exc}"})
                    continue
                out.append({"row": i, "input_ids": result["input_ids"], "labels": result["labels"]})
            meta = {
                "produced_by": "tools/axolotl_goldens.py",
                "axolotl": "0.19.0",
                "transformers": transformers.__version__,
                "tokenizer": f"fixtures/tokenizers/{name}",
                "dataset": "conversations.json",
                "axolotl_cfg": {"type": "chat_template", **cfg_keys},
                "inspect_data_flags": ["--framework", "axolotl", *flags],
            }
            (OUT / f"{name}.{setting}.json").write_text(_rows_json(out, meta), encoding="utf-8")
            print(f"{name} {setting}: {sum('labels' in r for r in out)} rows, {sum('error' in r for r in out)} refused")


def _rows_json(rows: list[dict], meta: dict | None = None) -> str:
    """One row per line, so a diff of a regenerated file shows which rows changed."""
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in rows)
    if meta is None:
        return f"[\n{body}\n]\n"
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in meta.items())
    return f'{{\n{head},\n  "rows": [\n{body}\n  ]\n}}\n'


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the unpacked axolotl-0.19.0 wheel")
    goldens(parser.parse_args().wheel)
