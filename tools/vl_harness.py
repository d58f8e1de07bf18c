"""The shared harness of the TRL vision goldens (tools/vl_goldens.py: SFT's collator; tools/vl_dpo_goldens.py: DPO's):
the strategies of the parts their rows share (images of every size and mode, text in the shapes users write), the
real processor, and the run that draws the cases with hypothesis (derandomized, so a run draws the same cases),
hands each to TRL's collator and writes the goldens with the versions that made them.

A suite is its ``case`` strategy and its ``run`` (the collator on one generated case: its output, or the exception
TRL raised); ``make_goldens`` does the rest:

    make_goldens(__doc__, case, run_trl, lambda processor: f"dpo-goldens-{processor}.json.gz",
                 "trl.trainer.dpo_trainer.DataCollatorForVisionPreference")

The shared environment has no torchvision (its wheels do not load on the CPU torch), so transformers cannot build
the processor's video processor; the processor is made with ``video_processor=None`` and its class check skipped.
Nothing of the image path is replaced: the image processor, ``replace_image_token``, the tokenizer and the token
count check are transformers' own.
"""

from __future__ import annotations

import argparse
import gzip
import json
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "trl-1.16.0-vision"
MODES = ("RGB", "L", "RGBA", "P", "LA", "CMYK", "1")
TEXT_ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",))
WORDS = ("What is in the picture?", "Describe it.", "A red ball.", "assistant\n", " ", "\n", "数字", "🚲", "[INST]",
         "{{ x }}", "Answer as\nassistant\nwould.")
SPECIAL = ("<|im_end|>", "<|image_pad|>", "<|vision_start|>", "<|im_start|>assistant\n")


def image_spec() -> st.SearchStrategy[dict[str, Any]]:
    side = st.one_of(st.integers(1, 64), st.integers(65, 400), st.integers(65, 400), st.integers(401, 700),
                     st.integers(701, 1400))
    return st.fixed_dictionaries({
        "width": side, "height": side, "mode": st.sampled_from(MODES),
        "colour": st.integers(0, 255),
    })


def text() -> st.SearchStrategy[str]:
    common = st.one_of(st.sampled_from(WORDS), st.text(TEXT_ALPHABET, max_size=40),
                       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map("".join))
    rare = st.tuples(common, st.sampled_from(SPECIAL), common).map("".join)
    return st.one_of(*([common] * 15), rare)


def make_image(spec: dict[str, Any]) -> Any:
    from PIL import Image

    colour = spec["colour"]
    fill: Any = {"RGB": (colour, 255 - colour, colour // 2), "RGBA": (colour, 10, 200, 128), "LA": (colour, 200),
                 "CMYK": (colour, 0, 50, 0)}.get(spec["mode"], colour)
    return Image.new(spec["mode"], (spec["width"], spec["height"]), fill)


def processor_for(folder: Path) -> Any:
    import transformers
    from transformers import AutoImageProcessor, AutoTokenizer
    from transformers.processing_utils import ProcessorMixin

    if not (folder / "preprocessor_config.json").is_file():  # one processor_config.json (LLaVA): no video processor
        from transformers import AutoProcessor

        return AutoProcessor.from_pretrained(str(folder), local_files_only=True)
    ProcessorMixin.check_argument_for_proper_class = lambda self, name, arg: None  # video_processor=None (no torchvision)
    template = json.loads((folder / "chat_template.json").read_text(encoding="utf-8"))["chat_template"]
    config = json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8"))
    processor_class = getattr(transformers, config["processor_class"])  # the class the folder names
    return processor_class(image_processor=AutoImageProcessor.from_pretrained(str(folder), local_files_only=True),
                            tokenizer=AutoTokenizer.from_pretrained(str(folder), local_files_only=True),
                            video_processor=None, chat_template=template)


Run = Callable[[Any, dict[str, Any]], dict[str, Any]]  # (processor, generated case) -> what TRL made of it


def make_goldens(doc: str, case: Callable[[], st.SearchStrategy[dict[str, Any]]], run_trl: Run,
                 file_name: Callable[[str], str], collator: str) -> None:
    """The command line of a suite: ``--cases N`` drawn from ``case()`` and run through ``run_trl`` with the
    processor ``--processor`` names; written to fixtures/trl-1.16.0-vision/, named by ``file_name(processor)``.

    Hypothesis also draws the short string literals of every local module loaded (its constants pool): a suite names
    its file with an f-string (no new literal) so that its draw, and the goldens, stay what they were."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--processor", default="qwen2-vl")
    args = parser.parse_args()
    folder = ROOT / "fixtures" / "processors" / args.processor
    warnings.simplefilter("ignore")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    processor = processor_for(folder)
    cases: list[dict[str, Any]] = []

    path = OUT / file_name(args.processor)

    def write(path: Path, processor: str, cases: list[dict[str, Any]]) -> None:
        write_document(path, processor, collator, cases)

    # hypothesis seeds its derandomized draw with the text of ``collect`` (function_digest): it stays, letter for
    # letter, the text both tools had, so that the same cases are drawn and the goldens stay byte-identical
    @settings(max_examples=args.cases, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case())
    def collect(generated: dict[str, Any]) -> None:
        if len(cases) < args.cases:
            cases.append({**generated, **run_trl(processor, generated)})
            if len(cases) % 250 == 0:  # a long run on a loaded machine keeps what it has made
                write(path, args.processor, cases)

    collect()
    write(path, args.processor, cases)
    errors = sum(1 for c in cases if "error" in c)
    print(f"{path}: {len(cases)} cases, {errors} refused by TRL")


def write_document(path: Path, processor: str, collator: str, cases: list[dict[str, Any]]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    versions = {name: metadata.version(name) for name in ("trl", "transformers", "tokenizers", "pillow", "hypothesis")}
    document = {"processor": processor, "collator": collator, "versions": versions, "cases": cases}
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as out:
        json.dump(document, out, ensure_ascii=False, separators=(",", ":"))
