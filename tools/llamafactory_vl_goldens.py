"""Goldens for LLaMA-Factory's multimodal rows: what its own data code makes of generated image rows (qwen2_vl).

Runs LLaMA-Factory 0.9.5's ``SharegptDatasetConverter`` (an ``mllm_demo``-style dataset: ``messages`` with role/content
and an ``images`` list, ``<image>`` placeholders in the text) and ``SupervisedDatasetProcessor.preprocess_dataset``
with the template ``qwen2_vl`` (its ``Qwen2VLPlugin``) and the real processor loaded from fixtures/processors/<name>
by LLaMA-Factory's ``load_tokenizer`` (``AutoProcessor``, then ``patch_processor``), on rows hypothesis generates:
placeholders that number the images or not (also in the system text and the replies), images of every size, aspect
ratio and mode Pillow makes (embedded PNG bytes, as the ``datasets`` Image feature stores them), rows its converter
drops, special-token literals, and the settings ``cutoff_len``, ``train_on_prompt``, ``mask_history`` and
``image_max_pixels``/``image_min_pixels``. Each case keeps the row (images as their size, mode and colour) and the
ids and labels, the drop, or the exception LLaMA-Factory raised.

Not run in CI (llamafactory caps transformers below mldebug's floor). In a throwaway venv (CPU, offline):

    python -m venv /work/venvs/lf-vision
    /work/venvs/lf-vision/bin/pip install llamafactory==0.9.5 torch==2.13.0 hypothesis
    /work/venvs/lf-vision/bin/pip uninstall -y torchvision torchaudio   # builds for another torch
    for k in 1 2 3 4; do HF_HUB_OFFLINE=1 /work/venvs/lf-vision/bin/python tools/llamafactory_vl_goldens.py \
        --cases 750 --seed $k & done                       # parts, in parallel (a loaded machine: ~30 min)
    /work/venvs/lf-vision/bin/python tools/llamafactory_vl_goldens.py --cases 250 --seed 5 --processor qwen2.5-vl-256
    python tools/llamafactory_vl_goldens.py --merge; python tools/llamafactory_vl_goldens.py --merge \
        --processor qwen2.5-vl-256                          # goldens-<processor>.json.gz
    HF_HUB_OFFLINE=1 /work/venvs/lf-vision/bin/python tools/llamafactory_vl_goldens.py --corpus ../shared/corpus

tests/goldens/llama_factory.py (suite llama-factory-vision) replays them against mldebug's emulation.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.machinery
import io
import json
import sys
import types
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "llamafactory-0.9.5-vision"
MODES = ("RGB", "L", "RGBA", "P", "LA", "CMYK", "1")
TEXT_ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",))
WORDS = ("What is in the picture?", "Describe it.", "A red ball.", "assistant\n", " ", "\n", "数字", "🚲", "<image",
         "{{content}}", "Answer as\nassistant\nwould.", "image>")
SPECIAL = ("<|im_end|>", "<|vision_start|>", "<|im_start|>assistant\n", "<video>")
COLUMNS = {"formatting": "sharegpt", "columns": {"messages": "messages", "images": "images"},
           "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                    "system_tag": "system"}}


def image_spec() -> st.SearchStrategy[dict[str, Any]]:
    side = st.one_of(st.integers(1, 40), st.integers(41, 400), st.integers(41, 400), st.integers(401, 900),
                     st.integers(901, 1400))
    return st.fixed_dictionaries({"width": side, "height": side, "mode": st.sampled_from(MODES),
                                  "colour": st.integers(0, 255)})


def text() -> st.SearchStrategy[str]:
    common = st.one_of(st.sampled_from(WORDS), st.text(TEXT_ALPHABET, max_size=30),
                       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map("".join))
    rare = st.tuples(common, st.sampled_from(SPECIAL), common).map("".join)
    return st.one_of(*([common] * 15), rare)


@st.composite
def with_placeholders(draw: Any, count: int) -> str:
    pieces = [draw(text()) for _ in range(count + 1)]
    joiners = [draw(st.sampled_from(("<image>",) * 6 + ("\n<image>\n",))) for _ in range(count)]
    return pieces[0] + "".join(j + p for j, p in zip(joiners, pieces[1:]))


@st.composite
def case(draw: Any) -> dict[str, Any]:
    images = draw(st.lists(image_spec(), min_size=0, max_size=3))
    placeholders = max(0, len(images) + draw(st.sampled_from((0,) * 14 + (1, -1))))
    turns = draw(st.integers(1, 3))
    # where each placeholder goes: a user turn mostly, now and then a reply or the system text
    slots = ["user"] * 14 + ["assistant", "system"]
    where = [(draw(st.sampled_from(slots)), draw(st.integers(0, turns - 1))) for _ in range(placeholders)]
    messages = []
    if draw(st.booleans()) or any(kind == "system" for kind, _ in where):
        messages.append({"role": "system", "content": draw(with_placeholders(sum(k == "system" for k, _ in where)))})
    for turn in range(turns):
        role = draw(st.sampled_from(("user",) * 14 + ("assistant",))) if turn == 0 else "user"
        here = sum(1 for kind, t in where if kind == "user" and t == turn)
        messages.append({"role": role, "content": draw(with_placeholders(here))})
        if draw(st.integers(0, 15)) or turn < turns - 1:
            here = sum(1 for kind, t in where if kind == "assistant" and t == turn)
            messages.append({"role": "assistant", "content": draw(with_placeholders(here))})
    cutoff = draw(st.sampled_from((2048, 2048, 2048, "small")))
    if cutoff == "small":
        cutoff = draw(st.integers(4, 900))
    pixels = draw(st.sampled_from(((768 * 768, 32 * 32),) * 4 + ((256 * 256, 32 * 32), (200_000, 64 * 64))))
    train_on_prompt = draw(st.integers(0, 5)) == 0
    mask_history = not train_on_prompt and draw(st.integers(0, 5)) == 0  # LLaMA-Factory refuses the two together
    return {"messages": messages, "images": images,
            "settings": {"cutoff_len": cutoff, "train_on_prompt": train_on_prompt, "mask_history": mask_history},
            "image_max_pixels": pixels[0], "image_min_pixels": pixels[1]}


def image_bytes(spec: dict[str, Any]) -> bytes:
    from PIL import Image

    colour = spec["colour"]
    fill: Any = {"RGB": (colour, 255 - colour, colour // 2), "RGBA": (colour, 10, 200, 128), "LA": (colour, 200),
                 "CMYK": (colour, 0, 50, 0)}.get(spec["mode"], colour)
    buffer = io.BytesIO()
    Image.new(spec["mode"], (spec["width"], spec["height"]), fill).save(
        buffer, format="JPEG" if spec["mode"] == "CMYK" else "PNG")
    return buffer.getvalue()


def _without_audio() -> None:
    """mm_plugin imports torchaudio at module level; no torchaudio build matches torch 2.13, and image rows never
    reach it, so an empty module stands in."""
    module = types.ModuleType("torchaudio")
    module.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules["torchaudio"] = module


def _processor_without_video(folder: Path, tokenizer: Any, model_args: Any) -> Any:
    """The folder's processor class with its image processor and LLaMA-Factory's tokenizer, as load_tokenizer builds it,
    where no torchvision build matches the CPU torch (so transformers cannot make the video processor). The image
    processor stands in as the video processor: LLaMA-Factory's _validate_input wants one, and no row has a video.
    Nothing of the image path is replaced: the image processor, the plugin and the tokenizer are the real ones."""
    import importlib

    import transformers
    from llamafactory.model.patcher import patch_processor
    from transformers.processing_utils import ProcessorMixin

    ProcessorMixin.check_argument_for_proper_class = lambda self, name, arg: None
    config = json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8"))
    template = json.loads((folder / "chat_template.json").read_text(encoding="utf-8"))["chat_template"]
    # AutoImageProcessor of transformers 5.6 wants torchvision; its PIL backend class is the one it would pick without
    module = importlib.import_module("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")
    image_processor = module.Qwen2VLImageProcessorPil.from_pretrained(str(folder), local_files_only=True)
    processor = getattr(transformers, config["processor_class"])(image_processor=image_processor, tokenizer=tokenizer,
                                                                 video_processor=None, chat_template=template)
    processor.video_processor = image_processor
    patch_processor(processor, tokenizer, model_args)
    return processor


class Runner:
    """LLaMA-Factory's tokenizer, processor and template for one processor folder, and its converter."""

    def __init__(self, folder: Path) -> None:
        from llamafactory.data.converter import get_dataset_converter
        from llamafactory.data.parser import DatasetAttr
        from llamafactory.data.template import get_template_and_fix_tokenizer
        from llamafactory.hparams import DataArguments, ModelArguments
        from llamafactory.model import load_tokenizer

        model_args = ModelArguments(model_name_or_path=str(folder))
        loaded = load_tokenizer(model_args)
        self.tokenizer, self.processor = loaded["tokenizer"], loaded["processor"]
        if self.processor is None:  # AutoProcessor needs torchvision for the video processor: built as below
            self.processor = _processor_without_video(folder, self.tokenizer, model_args)
        self.data_args = DataArguments(template="qwen2_vl", dataset_dir=str(folder))
        self.template = get_template_and_fix_tokenizer(self.tokenizer, self.data_args)
        attr = DatasetAttr("file", "generated.json", formatting="sharegpt")
        attr.join(COLUMNS)
        self.converter = get_dataset_converter("sharegpt", attr, self.data_args)

    def run(self, generated: dict[str, Any]) -> dict[str, Any]:
        from dataclasses import replace

        from llamafactory.data.processor.supervised import SupervisedDatasetProcessor

        data_args = replace(self.data_args, **generated["settings"])
        self.processor.image_max_pixels = generated["image_max_pixels"]
        self.processor.image_min_pixels = generated["image_min_pixels"]
        example = {"messages": json.loads(json.dumps(generated["messages"])),
                   "images": [{"bytes": image_bytes(s), "path": None} for s in generated["images"]]}
        converted = {key: [value] for key, value in self.converter(example).items()}
        processor = SupervisedDatasetProcessor(template=self.template, tokenizer=self.tokenizer,
                                               processor=self.processor, data_args=data_args)
        try:
            encoded = processor.preprocess_dataset(converted)
        except Exception as exc:  # noqa: BLE001 - what LLaMA-Factory raises is the golden
            first = str(exc).splitlines()[0] if str(exc) else ""
            return {"error": f"{type(exc).__name__}: {first[:300]}"}
        if not encoded["input_ids"]:
            return {"dropped": True}
        return {"input_ids": encoded["input_ids"][0], "labels": encoded["labels"][0]}


# the corpus's mllm_demo.json (LLaMA-Factory's own demo rows) names images it does not ship: these sizes stand in
CORPUS_IMAGES = {"mllm_demo_data/1.jpg": (640, 427), "mllm_demo_data/2.jpg": (480, 720),
                 "mllm_demo_data/3.jpg": (1280, 853)}


def write_corpus_images(folder: Path) -> None:
    from PIL import Image

    for name, (width, height) in CORPUS_IMAGES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (width, height), (90, 140, 200)).save(folder / name, format="JPEG")


def run_corpus(corpus: Path, runner: Runner) -> dict[str, Any]:
    """LLaMA-Factory's own loader path on the corpus's mllm_demo: dataset_info.json, the converter (media_dir joined
    to each image path), the supervised processor, with the default settings."""
    import tempfile
    from dataclasses import replace

    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.supervised import SupervisedDatasetProcessor

    folder = corpus / "datasets" / "llama-factory"
    with tempfile.TemporaryDirectory() as media:
        write_corpus_images(Path(media))
        data_args = replace(runner.data_args, dataset_dir=str(folder), media_dir=media)
        runner.processor.image_max_pixels, runner.processor.image_min_pixels = 768 * 768, 32 * 32
        [attr] = get_dataset_list(["mllm_demo"], str(folder))
        converter = get_dataset_converter(attr.formatting, attr, data_args)
        processor = SupervisedDatasetProcessor(template=runner.template, tokenizer=runner.tokenizer,
                                               processor=runner.processor, data_args=data_args)
        rows = []
        for example in load_dataset("json", data_files=str(folder / attr.dataset_name), split="train"):
            encoded = processor.preprocess_dataset({key: [value] for key, value in converter(example).items()})
            rows.append({"input_ids": encoded["input_ids"][0], "labels": encoded["labels"][0]})
    return {"dataset": "datasets/llama-factory/mllm_demo.json", "images": CORPUS_IMAGES, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--processor", default="qwen2-vl")
    parser.add_argument("--seed", type=int, help="hypothesis seed (a part, run beside others; --merge joins them)")
    parser.add_argument("--merge", action="store_true", help="join the parts of --processor and stop")
    parser.add_argument("--corpus", help="the shared corpus: also run its mllm_demo.json (written to corpus-<processor>)")
    args = parser.parse_args()
    if args.merge:
        merge(args.processor)
        return
    warnings.simplefilter("ignore")
    _without_audio()
    import llamafactory
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    runner = Runner(ROOT / "fixtures" / "processors" / args.processor)
    if args.corpus:
        document = {"processor": args.processor, "template": "qwen2_vl", "llamafactory": llamafactory.__version__,
                    **run_corpus(Path(args.corpus), runner)}
        path = OUT / f"corpus-{args.processor}.json"
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"{path}: {len(document['rows'])} rows")
        return
    cases: list[dict[str, Any]] = []
    versions = {name: metadata.version(name) for name in ("transformers", "tokenizers", "pillow", "hypothesis", "torch")}
    versions["llamafactory"] = llamafactory.__version__
    document = {"processor": args.processor, "template": "qwen2_vl", "processor_class": type(runner.processor).__name__,
                "image_processor_class": type(runner.processor.image_processor).__name__,
                "processor_run": "llamafactory.data.processor.supervised.SupervisedDatasetProcessor",
                "versions": versions, "seed": args.seed, "cases": cases}
    part = f".part{args.seed}" if args.seed is not None else ""
    path = OUT / f"goldens-{args.processor}{part}.json.gz"
    OUT.mkdir(parents=True, exist_ok=True)

    @settings(max_examples=args.cases, database=None, derandomize=args.seed is None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case())
    def collect(generated: dict[str, Any]) -> None:
        if len(cases) < args.cases:
            cases.append({**generated, **runner.run(generated)})
            if len(cases) % 100 == 0:  # a long run on a loaded machine keeps what it has
                write(path, document)

    if args.seed is not None:
        collect = seed(args.seed)(collect)
    collect()
    write(path, document)
    outcome = {kind: sum(1 for c in cases if kind in c) for kind in ("input_ids", "dropped", "error")}
    print(f"{path}: {len(cases)} cases, {outcome}")


def write(path: Path, document: dict[str, Any]) -> None:
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as out:
        json.dump(document, out, ensure_ascii=False, separators=(",", ":"))


def merge(processor: str) -> None:
    """The parts (--seed runs, in parallel) joined into goldens-<processor>.json.gz, each case keeping its seed."""
    parts = sorted(OUT.glob(f"goldens-{processor}.part*.json.gz"))
    documents = []
    for part in parts:
        with gzip.open(part, "rt", encoding="utf-8") as file:
            documents.append(json.load(file))
    merged = {**documents[0], "seed": [d["seed"] for d in documents],
              "cases": [{**c, "seed": d["seed"]} for d in documents for c in d["cases"]]}
    write(OUT / f"goldens-{processor}.json.gz", merged)
    print(f"{processor}: {len(merged['cases'])} cases from {len(parts)} parts")


if __name__ == "__main__":
    main()
