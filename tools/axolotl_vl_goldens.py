"""Goldens for axolotl's multimodal rows: what axolotl 0.19.0's own MultiModalChatDataCollator makes of generated rows.

Runs in /work/venvs/axolotl-mm (the shared Python's packages, with the axolotl 0.19.0 wheel and the transformers it
pins, 5.16.1, installed over them with --no-deps; httpx, addict and huggingface-hub<2 added for them):

    python -m venv --system-site-packages /work/venvs/axolotl-mm
    /work/venvs/axolotl-mm/bin/pip install --no-deps axolotl==0.19.0 transformers==5.16.1
    /work/venvs/axolotl-mm/bin/pip install httpx addict "huggingface-hub>=1.5,<2"
    nice -n 15 /work/venvs/axolotl-mm/bin/python tools/axolotl_vl_goldens.py --cases 3000 --processor qwen2-vl
    (stored: qwen2-vl, gemma-3 and llava-1.5, --cases 3000 each. idefics3
    does not run: its image processor needs torchvision at transformers 5.16.1, and no torchvision wheel loads on
    this CPU torch)

Only the modules of the multimodal path are imported (``axolotl.processing_strategies``,
``axolotl.utils.collators.mm_chat``): ``get_processing_strategy`` picks the strategy as the trainer builder does (the
config's ``chat_template`` name, the processor's class), with the masking settings the builder passes it
(train_on_inputs, roles_to_train, train_on_eos), and the chat template the builder resolves (axolotl's named
template, or none: the tokenizer's, else the processor's). One row per batch (no padding). Rows are drawn in the
shapes users write: ``messages`` or ShareGPT ``conversations``, string contents or parts with bare
``{"type": "image"}`` placeholders (too few, too many), an ``images`` or ``image`` column of 0-3 images of every
size and mode, system turns, a content that is not text, special-token literals in the text. Each case keeps the row
(images as size, mode and colour), the settings, and axolotl's ids and labels, or the exception it raised.
Written to fixtures/axolotl-0.19.0-vision/goldens-<processor>.json.gz with the versions that made them.
"""

from __future__ import annotations

import gzip
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vl_harness  # noqa: E402
from vl_harness import image_spec, make_goldens, make_image, text  # noqa: E402

AXOLOTL_OUT = vl_harness.ROOT / "fixtures" / "axolotl-0.19.0-vision"
# the chat_template names drawn per processor folder (None: unset, the tokenizer's or the processor's own template)
TEMPLATES = {"qwen2-vl": (None, "qwen2_vl", "qwen2_vl", "qwen2_vl"), "gemma-3": (None, "gemma3", "gemma3"),
             "llava-1.5": (None, "llava"),
             "idefics3": (None,)}  # its image processor needs torchvision at 5.16.1: not run
FOLDER = ["qwen2-vl"]  # the --processor folder (read when case() draws the settings)
PACKAGES = ("axolotl", "transformers", "tokenizers", "pillow", "torch", "hypothesis")


@st.composite
def case(draw: Any) -> dict[str, Any]:
    images = draw(st.lists(image_spec(), min_size=0, max_size=3))
    as_parts = draw(st.booleans())
    placeholders = max(0, (1 if images else 0) + draw(st.sampled_from((0,) * 10 + (1, -1, 2)))) if as_parts else 0
    sharegpt = draw(st.integers(0, 5)) == 0
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text())})
    turns, left = draw(st.integers(1, 3)), placeholders
    for turn in range(turns):
        if as_parts and not sharegpt:
            here = left if turn == turns - 1 else draw(st.integers(0, left))
            left -= here
            parts: list[dict[str, Any]] = [{"type": "text", "text": draw(text())}
                                           for _ in range(draw(st.integers(0, 2)))]
            for _ in range(here):
                parts.insert(draw(st.integers(0, len(parts))), {"type": "image"})
            messages.append({"role": "user", "content": parts})
        else:
            messages.append({"role": "user", "content": draw(text())})
        if draw(st.integers(0, 19)) == 0:
            messages.append({"role": "user", "content": None})  # axolotl leaves out a message whose content is neither
        messages.append({"role": "assistant", "content": draw(text())})
    row: dict[str, Any]
    if sharegpt:
        names = {"system": "system", "user": "human", "assistant": "gpt"}
        row = {"conversations": [{"from": names[m["role"]], "value": m["content"]} for m in messages
                                 if isinstance(m["content"], str)]}
    else:
        row = {"messages": messages}
    column = draw(st.sampled_from(("images",) * 8 + ("image", None)))
    settings = {"chat_template": draw(st.sampled_from(TEMPLATES[FOLDER[0]])),
                "train_on_inputs": draw(st.sampled_from((False,) * 5 + (True,))),
                "roles_to_train": draw(st.sampled_from((None,) * 6 + (["user", "assistant"], [], ["system"]))),
                "train_on_eos": draw(st.sampled_from((None,) * 4 + ("turn", "all", "none", "last")))}
    return {"row": row, "column": column if images else None, "images": images, "settings": settings}


def run_axolotl(processor: Any, generated: dict[str, Any]) -> dict[str, Any]:
    from axolotl.processing_strategies import get_processing_strategy
    from axolotl.utils.chat_templates import get_chat_template
    from axolotl.utils.collators.mm_chat import MultiModalChatDataCollator

    settings = generated["settings"]
    name = settings["chat_template"]
    template = get_chat_template(name) if name else None  # the builder resolves only a chat_template it is given
    example = json.loads(json.dumps(generated["row"]))
    if generated["column"]:
        example[generated["column"]] = [make_image(s) for s in generated["images"]]
    try:
        strategy = get_processing_strategy(processor, template, name, train_on_inputs=settings["train_on_inputs"],
                                           roles_to_train=settings["roles_to_train"],
                                           train_on_eos=settings["train_on_eos"])
        out = MultiModalChatDataCollator(tokenizer=processor.tokenizer, processing_strategy=strategy)([example])
    except Exception as exc:  # noqa: BLE001 - what axolotl raises is the golden
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    return {"input_ids": out["input_ids"][0].tolist(), "labels": out["labels"][0].tolist()}


def processor_for(folder: Path) -> Any:
    """vl_harness.processor_for at transformers 5.16.1, whose top-level AutoImageProcessor and AutoProcessor are
    placeholders without torchvision (no wheel of it loads on this CPU torch): the same classes, from their modules."""
    import importlib

    import transformers
    from transformers.processing_utils import ProcessorMixin

    auto = f"{transformers.__name__}.models.auto"
    image_processor = importlib.import_module(f"{auto}.image_processing_auto").AutoImageProcessor
    tokenizer = importlib.import_module(f"{auto}.tokenization_auto").AutoTokenizer
    if not (folder / "preprocessor_config.json").is_file():  # one processor_config.json (LLaVA, Gemma 3, Idefics3)
        return importlib.import_module(f"{auto}.processing_auto").AutoProcessor.from_pretrained(
            str(folder), local_files_only=True)
    ProcessorMixin.check_argument_for_proper_class = lambda self, name, arg: None  # video_processor=None
    template = json.loads((folder / "chat_template.json").read_text(encoding="utf-8"))["chat_template"]
    config = json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8"))
    return getattr(transformers, config["processor_class"])(
        image_processor=image_processor.from_pretrained(str(folder), local_files_only=True),
        tokenizer=tokenizer.from_pretrained(str(folder), local_files_only=True), video_processor=None,
        chat_template=template)


def write_document(path: Path, processor: str, collator: str, cases: list[dict[str, Any]]) -> None:
    AXOLOTL_OUT.mkdir(parents=True, exist_ok=True)
    versions = {name: metadata.version(name) for name in PACKAGES}
    document = {"processor": processor, "collator": collator, "versions": versions, "cases": cases}
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as out:
        json.dump(document, out, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    FOLDER[:] = [sys.argv[sys.argv.index("--processor") + 1] if "--processor" in sys.argv
                                 else "qwen2-vl"]
    vl_harness.OUT = AXOLOTL_OUT  # the harness writes under its OUT, through its write_document
    vl_harness.write_document = write_document
    vl_harness.processor_for = processor_for
    make_goldens(__doc__, case, run_axolotl, lambda processor: f"goldens-{processor}.json.gz",
                 "axolotl.utils.collators.mm_chat.MultiModalChatDataCollator")
