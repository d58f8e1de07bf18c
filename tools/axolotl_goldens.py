"""Write fixtures/axolotl-0.19.0/: real axolotl 0.19.0 input_ids and labels for the project's own conversations.

Not run in CI (axolotl is not a dependency): tests/render/test_axolotl.py reads what this wrote and
checks that `mldebug inspect-data --framework axolotl` gives the same ids and labels.

Usage (axolotl's wheel unpacked, not installed: its dependencies are mostly not needed here):

    pip download axolotl==0.19.0 --no-deps -d /tmp/axo/dl
    python -m zipfile -e /tmp/axo/dl/axolotl-0.19.0-py3-none-any.whl /tmp/axo/whl
    python tools/axolotl_goldens.py --wheel /tmp/axo/whl

It runs axolotl's own ``chat_template`` strategy (``prompt_strategies.chat_template.load``, then
``tokenize_prompt``) with axolotl's defaults, and with ``train_on_inputs: true``.

Then axolotl's instruction prompters (``PROMPTER_SETTINGS``: alpaca and its styles, alpaca_chat,
alpaca_w_system, the dict form of ``type``, completion, input_output) on the project's instruction rows:
axolotl's own dispatch (``utils/data/wrappers.py`` ``get_dataset_wrapper``, which wraps the rows in a
``datasets.Dataset`` and maps ``tokenize_prompt`` over them), then its length filter
(``filter_sequences_by_length`` from ``utils/trainer.py``, executed alone: that module imports numba and
torch). ``bradley_terry`` (a reward-model loader, needs peft) is stubbed, and ``colorama`` (colour codes in a
repr) when it is not installed; neither is on the path these rows take. Install ``addict`` (the dict form of
``type`` reads nested settings through it): ``pip install addict colorama``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import types
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
OUT = FIXTURES / "axolotl-0.19.0"
TOKENIZERS = ("qwen2.5-instruct", "qwen3", "llama3-instruct", "mistral-nemo-instruct")  # all from npm
# name -> (axolotl cfg keys, the inspect-data flags that ask for the same)
CLOCK = datetime(2026, 11, 24, 12, 0)  # the instant the named-template goldens were rendered at
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


SEQUENCE_LEN = 256  # small, so the long rows show axolotl's truncation, drop and completion split
USER_DEFINED = {"field_instruction": "instruction", "field_input": "input", "field_output": "output",
                "field_system": "system", "format": "[INST] {instruction}\n\n{input} [/INST] ",
                "no_input_format": "[INST] {instruction} [/INST] ", "system_format": "<<SYS>>\n{system}\n<</SYS>>\n\n"}
# name -> (dataset file, the dataset entry, top-level cfg keys)
PROMPTER_SETTINGS = {
    "alpaca": ("instructions.json", {"type": "alpaca"}, {}),
    "alpaca.train_on_inputs": ("instructions.json", {"type": "alpaca"}, {"train_on_inputs": True}),
    "alpaca-chatml": ("instructions.json", {"type": "alpaca:chatml"}, {}),
    "alpaca_chat": ("instructions.json", {"type": "alpaca_chat"}, {}),
    "alpaca_w_system.load_instruct": ("instructions.json", {"type": "alpaca_w_system.load_instruct"}, {}),
    "user_defined": ("instructions.json", {"type": USER_DEFINED}, {}),
    "completion": ("texts.json", {"type": "completion"}, {}),
    "input_output": ("segments.json", {"type": "input_output"}, {"train_on_inputs": False}),
}


def instructions() -> list[dict]:
    """The project's own instruction rows (alpaca columns, and a system column); each comment says what it exercises."""
    sys.path.insert(0, str(ROOT / "tools"))
    from make_fixture_data import QA, SYSTEM

    notes = "Chain worn 0.75%; cassette fine; rear pads glazed, sanded; headset adjusted."
    log = "\n".join(f"{d:02d}/03 job {d}: {QA[d % len(QA)][0]} -> {QA[d % len(QA)][1]}" for d in range(1, 9))
    return [
        {"instruction": "Summarise these workshop notes for the customer.", "input": notes,
         "output": "Your chain is worn and needs replacing soon; the rear brake pads were cleaned.", "system": ""},  # input
        {"instruction": QA[0][0], "output": QA[0][1], "system": SYSTEM},  # no input column in this row
        {"instruction": QA[1][0], "input": "", "output": QA[1][1], "system": SYSTEM},  # an empty input
        {"instruction": QA[2][0], "input": "", "output": "", "system": ""},  # an empty output: axolotl adds no EOS
        {"instruction": "Which jobs in this log involved the chain?", "input": log,
         "output": "Jobs 2 and 6.", "system": SYSTEM},  # a prompt longer than sequence_len: truncated, then dropped
        {"instruction": QA[3][0], "input": "", "output": " ".join(a for _, a in QA[:6]), "system": ""},  # a long answer
        {"instruction": 'Write the order as JSON like {"part": "...", "qty": 1}.', "input": "two 700x40 inner tubes",
         "output": '{"part": "inner tube 700x40", "qty": 2}', "system": "Answer with JSON only."},  # braces in the data
        {"instruction": "Traduis en français : « Le dérailleur est réglé. »", "input": "",
         "output": "Le dérailleur est réglé — tout est prêt.", "system": SYSTEM},  # non-ASCII text
    ]


def texts() -> list[dict]:
    """Completion rows: short, empty, and one longer than sequence_len (axolotl splits it into rows)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from make_fixture_data import QA

    return [
        {"text": f"Q: {QA[4][0]}\nA: {QA[4][1]}"},
        {"text": "\n\n".join(f"Q: {q}\nA: {a}" for q, a in QA)},
        {"text": "ok"},
    ]


def segments() -> list[dict]:
    """input_output rows: segments trained or not by their label."""
    sys.path.insert(0, str(ROOT / "tools"))
    from make_fixture_data import QA

    return [{"segments": [{"label": False, "text": f"<|user|> {q}\n"}, {"label": True, "text": f"<|bot|> {a}\n"},
                          {"label": False, "text": "<|user|> thanks\n"}, {"label": True, "text": "<|bot|> You're welcome."}]}
            for q, a in QA[6:9]]


MAPPED = {"field_messages": "dialogue", "message_property_mappings": {"role": "speaker", "content": "text"},
          "roles": {"user": ["customer"], "assistant": ["mechanic"], "system": ["shop"]}}
# name -> the chat_template dataset entry (read through axolotl's own SFTDataset schema), over chats.json
CHAT_SETTINGS = {
    "mapped": MAPPED,
    "mapped.train_field": {**MAPPED, "message_field_training": "train"},
    "mapped.roles_to_train": {**MAPPED, "roles_to_train": ["customer", "mechanic"], "train_on_eos": "all"},
    "mapped.split_thinking": {**MAPPED, "split_thinking": True},
    "older_keys": {"field_messages": "dialogue", "message_field_role": "speaker", "message_field_content": "text",
                   "roles": MAPPED["roles"]},
}


# tokenizer -> axolotl's named templates tried with it (chat_template: NAME, on conversations.json)
NAMED_TEMPLATES = {
    "qwen2.5-instruct": ("chatml", "qwen_25", "phi_3", "gemma3"),
    "qwen3": ("chatml", "qwen3"),
    "llama3-instruct": ("chatml", "llama3"),
    "mistral-nemo-instruct": ("chatml", "mistral_v7_tekken"),
}


def chats() -> list[dict]:
    """Conversations under ``dialogue`` with speaker/text keys and the shop's own role names; some turns carry
    ``train``; some replies a ``<think>`` block (split_thinking moves it to reasoning_content)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from make_fixture_data import QA, SYSTEM

    def turn(speaker: str, text: str, **extra) -> dict:
        return {"speaker": speaker, "text": text, **extra}

    return [
        {"dialogue": [turn("customer", QA[0][0]), turn("mechanic", QA[0][1])]},
        {"dialogue": [turn("shop", SYSTEM), turn("customer", QA[1][0]), turn("mechanic", QA[1][1], train=False),
                      turn("customer", QA[2][0]), turn("mechanic", QA[2][1], train=True)]},
        {"dialogue": [turn("customer", QA[3][0]), turn("mechanic", f"<think>\nThe customer asks about truing.\n</think>\n\n{QA[3][1]}"),
                      turn("customer", QA[4][0], train=True), turn("mechanic", f"<think>Sealant stock.</think>{QA[4][1]}")]},
        {"dialogue": [turn("customer", QA[5][0]), turn("mechanic", f"<reasoning>chain wear</reasoning> <|begin_of_solution|> {QA[5][1]} <|end_of_solution|>")]},
    ]


def load_axolotl(wheel: Path):
    """axolotl's chat_template module from the unpacked wheel (``addict`` stubbed when it is not installed: the
    chat_template strategy imports it but reads no nested setting; the dict form of ``type`` needs the real one)."""
    sys.path.insert(0, str(wheel))
    try:
        import addict  # noqa: F401
    except ImportError:
        addict = types.ModuleType("addict")
        addict.Dict = type("Dict", (dict,), {"__getattr__": dict.get})
        sys.modules["addict"] = addict
    from axolotl.prompt_strategies import chat_template
    from axolotl.utils.dict import DictDefault

    return chat_template, DictDefault


def load_prompters(wheel: Path):
    """axolotl's dataset dispatch (``get_dataset_wrapper``) and its length filter, from the unpacked wheel."""
    import ast
    import importlib.util

    load_axolotl(wheel)
    try:
        import colorama  # noqa: F401
    except ImportError:
        colorama = types.ModuleType("colorama")
        colorama.Fore = types.SimpleNamespace(CYAN="", RESET="")
        sys.modules["colorama"] = colorama
    bradley_terry = types.ModuleType("axolotl.prompt_strategies.bradley_terry")
    bradley_terry.load = None
    sys.modules.setdefault("axolotl.prompt_strategies.bradley_terry", bradley_terry)
    spec = importlib.util.spec_from_file_location("axolotl_wrappers", wheel / "axolotl/utils/data/wrappers.py")
    wrappers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wrappers)
    source = (wheel / "axolotl/utils/trainer.py").read_text()
    node = next(n for n in ast.parse(source).body if getattr(n, "name", "") == "filter_sequences_by_length")
    space: dict = {}
    exec(compile(ast.Module([node], []), "axolotl/utils/trainer.py", "exec"), space)  # noqa: S102 - axolotl's own code
    return wrappers, space["filter_sequences_by_length"]


def prompter_goldens(wheel: Path) -> None:
    import transformers
    from datasets import Dataset
    from transformers import AutoTokenizer

    wrappers, keep = load_prompters(wheel)
    from axolotl.utils.dict import DictDefault

    logging.disable(logging.WARNING)
    datasets = {"instructions.json": instructions(), "texts.json": texts(), "segments.json": segments()}
    out_dir = OUT / "prompters"
    out_dir.mkdir(exist_ok=True)
    for file, rows in datasets.items():
        (out_dir / file).write_text(_rows_json(rows), encoding="utf-8")
    for name in TOKENIZERS:
        folder = FIXTURES / "tokenizers" / name
        for setting, (file, entry, cfg_keys) in PROMPTER_SETTINGS.items():
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            cfg = DictDefault({"sequence_len": SEQUENCE_LEN, "train_on_inputs": False, **cfg_keys})
            ds_cfg = DictDefault({"path": file, **entry})
            kind = ds_cfg.type
            base, style = (kind.split(":") + [None])[:2] if isinstance(kind, str) else (None, None)
            def run(rows: list[dict], ds_cfg=ds_cfg, tokenizer=tokenizer, cfg=cfg, base=base, style=style) -> list[dict]:
                wrapped, _ = wrappers.get_dataset_wrapper(ds_cfg, tokenizer, cfg, base, Dataset.from_list(rows), style)
                return [{"input_ids": r["input_ids"], "labels": r["labels"],
                         "kept": bool(keep(r, sequence_len=SEQUENCE_LEN))} for r in wrapped]

            if file == "texts.json":  # completion splits a row into several: one row per call, to tell whose
                out = [{"row": i, "rows": run([row])} for i, row in enumerate(datasets[file])]
            else:  # one call over all rows, so the columns are the dataset's (a missing key reads as None)
                out = [{"row": i, **r} for i, r in enumerate(run(datasets[file]))]
            meta = {
                "produced_by": "tools/axolotl_goldens.py",
                "axolotl": "0.19.0",
                "transformers": transformers.__version__,
                "tokenizer": f"fixtures/tokenizers/{name}",
                "dataset": file,
                "axolotl_cfg": {"sequence_len": SEQUENCE_LEN, **cfg_keys, "datasets": [{"path": file, **entry}]},
            }
            (out_dir / f"{name}.{setting}.json").write_text(_rows_json(out, meta), encoding="utf-8")
            print(f"{name} {setting}: {len(out)} rows, {sum(not r.get('kept', True) for r in out)} dropped")



def chat_goldens(wheel: Path) -> None:
    """chat_template with the settings that change how a conversation is read (CHAT_SETTINGS)."""
    import transformers
    from transformers import AutoTokenizer

    chat_template, DictDefault = load_axolotl(wheel)
    from axolotl.utils.schemas.datasets import SFTDataset

    logging.disable(logging.WARNING)
    rows = chats()
    out_dir = OUT / "chat"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "chats.json").write_text(_rows_json(rows), encoding="utf-8")
    for name in TOKENIZERS:
        folder = FIXTURES / "tokenizers" / name
        for setting, entry in CHAT_SETTINGS.items():
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            cfg = DictDefault({"sequence_len": 100_000, "train_on_inputs": False})
            # through axolotl's schema, dumped without unset keys, as its config loader (validate_config) does
            ds_cfg = DictDefault(SFTDataset(path="chats.json", type="chat_template", **entry).model_dump(exclude_none=True))
            strategy = chat_template.load(tokenizer, cfg, ds_cfg)
            out = []
            for i, row in enumerate(rows):
                try:
                    result = strategy.tokenize_prompt(json.loads(json.dumps(row)))
                except Exception as exc:  # axolotl stops there
                    out.append({"row": i, "error": f"{type(exc).__name__}: {exc}"})
                    continue
                out.append({"row": i, "input_ids": result["input_ids"], "labels": result["labels"]})
            meta = {
                "produced_by": "tools/axolotl_goldens.py",
                "axolotl": "0.19.0",
                "transformers": transformers.__version__,
                "tokenizer": f"fixtures/tokenizers/{name}",
                "dataset": "chats.json",
                "axolotl_cfg": {"sequence_len": 100_000, "datasets": [{"path": "chats.json", "type": "chat_template", **entry}]},
            }
            (out_dir / f"{name}.{setting}.json").write_text(_rows_json(out, meta), encoding="utf-8")
            print(f"{name} {setting}: {sum('labels' in r for r in out)} rows, {sum('error' in r for r in out)} refused")


def named_goldens(wheel: Path) -> None:
    """chat_template: NAME (axolotl's own templates) on the conversations, as axolotl copies a top-level choice into
    each chat_template dataset (normalize_cfg_datasets) and reads the entry through its schema."""
    import transformers
    from transformers import AutoTokenizer

    chat_template, DictDefault = load_axolotl(wheel)
    from axolotl.utils.schemas.datasets import SFTDataset

    logging.disable(logging.WARNING)
    _pin_clock()
    rows = conversations()
    out_dir = OUT / "named"
    out_dir.mkdir(exist_ok=True)
    for name, templates in NAMED_TEMPLATES.items():
        for template in templates:
            tokenizer = AutoTokenizer.from_pretrained(str(FIXTURES / "tokenizers" / name))
            cfg = DictDefault({"sequence_len": 100_000, "train_on_inputs": False, "chat_template": template})
            entry = SFTDataset(path="conversations.json", type="chat_template", chat_template=template)
            strategy = chat_template.load(tokenizer, cfg, DictDefault(entry.model_dump(exclude_none=True)))
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
                "clock": CLOCK.isoformat(),
                "axolotl": "0.19.0",
                "transformers": transformers.__version__,
                "tokenizer": f"fixtures/tokenizers/{name}",
                "dataset": "../conversations.json",
                "axolotl_cfg": {"sequence_len": 100_000, "chat_template": template,
                                "datasets": [{"path": "../conversations.json", "type": "chat_template"}]},
            }
            (out_dir / f"{name}.{template}.json").write_text(_rows_json(out, meta), encoding="utf-8")
            print(f"{name} {template}: {sum('labels' in r for r in out)} rows, {sum('error' in r for r in out)} refused")


def _pin_clock() -> None:
    """Templates that read the clock (mistral_v7_tekken's ``strftime_now``) write the date into the ids: render at
    ``CLOCK``, recorded in each golden, so the tests compare on any day (tests/support.py ``golden_clock``)."""
    import transformers.utils.chat_template_utils as chat_utils

    class FixedClock(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ARG003 - datetime.now's signature
            return CLOCK

    chat_utils.datetime = FixedClock


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
    parser.add_argument("--only", choices=("chat_template", "chat_settings", "named", "prompters"), help="write one set only")
    args = parser.parse_args()
    for name, write in (("chat_template", goldens), ("chat_settings", chat_goldens), ("named", named_goldens),
                        ("prompters", prompter_goldens)):
        if args.only in (None, name):
            write(args.wheel)
