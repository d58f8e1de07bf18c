"""Write fixtures/axolotl-0.19.0/: real axolotl 0.19.0 input_ids and labels for the project's own conversations.

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
TOKENIZERS = ("qwen2.5-instruct", "qwen3", "llama3-instruct", "mistral-nemo-instruct")  # all from npm
# name -> (axolotl cfg keys, the inspect-data flags that ask for the same)
SETTINGS = {"defaults": ({}, []), "train_on_inputs": ({"train_on_inputs": True}, ["--train-on", "all"])}


def conversations() -> list[dict]:
    """The project's own rows (tools/make_fixture_data.py), as chat_template `messages` rows; each comment says
    what the row exercises."""
    sys.path.insert(0, str(ROOT / "tools"))
    from make_fixture_data import BOOK_TOOL, MULTI_TURN, QA, SYSTEM, WEATHER_TOOL

    qa = [_pair(q, a) for q, a in QA]
    notes = "Summarise these notes for the customer.\nChain worn 0.75%; cassette fine; rear pads glazed, sanded."
    return [
        {"messages": [m for turn in MULTI_TURN[0] for m in _pair(*turn)]},  # multi-turn
        {"messages": [{"role": "system", "content": SYSTEM}, *qa[0], *qa[1]]},  # a system message
        {"messages": [*_pair(QA[2][0], ""), *qa[3]]},  # an empty assistant turn
        {"messages": [*_pair(notes, "Your chain needs replacing soon; the brakes were cleaned."), *qa[4]]},  # input block
        _tool_row([WEATHER_TOOL]),  # a tool call and its result
        {"messages": [*_thinking(*QA[5]), *_thinking(*QA[6])]},  # <think> blocks the Qwen3 template rewrites
        {"system": SYSTEM, "messages": qa[7]},  # a row-level system field: axolotl prepends it
        {"system": "", "messages": qa[8]},  # an empty one (Qwen2.5 then drops its default system prompt)
        {"messages": _parts(qa[9])},  # content as a list of text parts: axolotl joins them
        _tool_row([WEATHER_TOOL, BOOK_TOOL], string_arguments=True),  # tool-call arguments as a JSON string
    ]


def _pair(user: str, assistant: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def _parts(messages: list[dict]) -> list[dict]:
    """Each content as two text parts, split before a space near its middle."""
    out = []
    for m in messages:
        text = m["content"]
        cut = text.find(" ", len(text) // 2)
        cut = cut if cut > 0 else len(text)
        out.append({**m, "content": [{"type": "text", "text": text[:cut]}, {"type": "text", "text": text[cut:]}]})
    return out


def _thinking(question: str, answer: str) -> list[dict]:
    return _pair(question, f"<think>\nThe customer asks: {question}\n</think>\n\n{answer}")


def _tool_row(tools: list[dict], string_arguments: bool = False) -> dict:
    """A tool call (OpenAI tool_calls) and its result (a tool message)."""
    arguments = {"part": "RD-R7000"}
    return {"messages": [
        {"role": "user", "content": "Do you have a 105 rear derailleur in stock?"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
            "name": "check_stock", "arguments": json.dumps(arguments) if string_arguments else arguments}}]},
        {"role": "tool", "content": json.dumps({"part": "RD-R7000", "in_stock": 2})},
        {"role": "assistant", "content": "Yes, we have two in stock."},
    ], "tools": tools}


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
