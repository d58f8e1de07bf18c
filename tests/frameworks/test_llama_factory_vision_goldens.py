"""LLaMA-Factory's multimodal rows: its goldens (tools/llamafactory_vl_goldens.py; replayed case for case by
tests/goldens/, suite llama-factory-vision) record what made them and every outcome; a cut inside an image is found
where LLaMA-Factory cuts; its own mllm_demo rows read as it trains them."""

from __future__ import annotations

import json
from pathlib import Path

from goldens.llama_factory import VISION as SUITE
from goldens.llama_factory import VISION_GOLDENS as GOLDENS
from goldens.llama_factory import rows_for
from goldens.llama_factory import vision_row as mldebug_row
from goldens.vision import processor

from mldebug_cli.frameworks.llama_factory import vision as lf_vision
from mldebug_cli.sources.images import ImageReader
from support import CORPUS, needs_corpus


def test_goldens_record_the_versions_and_every_outcome() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["llamafactory"] == "0.9.5"
        assert doc["template"] == "qwen2_vl"
        cases = doc["cases"]
        for outcome in ("input_ids", "error", "dropped"):
            assert any(outcome in c for c in cases), outcome
        assert sum(1 for c in cases if "error" in c) < len(cases) // 2
    assert len(SUITE.goldens("goldens-qwen2-vl.json.gz")["cases"]) >= 3000


def test_a_cut_inside_an_image_is_found_where_llama_factory_cuts() -> None:
    """LLaMA-Factory cuts each pair to its share of cutoff_len: the image in the first prompt loses its tail while the
    reply keeps tokens after it (a cut at the row's end would not be seen)."""
    case = {"messages": [{"role": "user", "content": "<image>Describe the picture."},
                         {"role": "assistant", "content": "A grey square, large and plain." * 3}],
            "images": [{"width": 300, "height": 300, "mode": "RGB", "colour": 9}],
            "settings": {"cutoff_len": 60, "train_on_prompt": False, "mask_history": False},
            "image_max_pixels": 768 * 768, "image_min_pixels": 32 * 32}
    row = mldebug_row(case, "qwen2-vl")
    [image] = row.images
    assert image.tokens == 121 and len(row.input_ids) == 60
    assert row.cut_images == [image] and 0 < row.kept_tokens(image) < image.tokens
    assert row.labels[-1] != -100  # the reply is kept after the cut image


@needs_corpus
def test_llama_factorys_own_mllm_demo_reads_as_it_trains_it(tmp_path: Path) -> None:
    """The corpus's mllm_demo.json (LLaMA-Factory's demo rows, read in place) with stand-in images at the paths it
    names, under media_dir: every row's ids and labels equal LLaMA-Factory's (corpus-qwen2-vl.json); without the
    images, each row is one DS032 finding naming the missing file, the rest still checked."""
    from PIL import Image

    golden = json.loads((GOLDENS / "corpus-qwen2-vl.json").read_text(encoding="utf-8"))
    for name, (width, height) in golden["images"].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (width, height), (90, 140, 200)).save(tmp_path / name, format="JPEG")
    rows = json.loads((CORPUS / golden["dataset"]).read_text(encoding="utf-8"))
    profile = rows_for("qwen2-vl", 2048, False, False)
    for index, (raw, want) in enumerate(zip(rows, golden["rows"], strict=True)):
        row = lf_vision.encode_row(index, None, raw, processor("qwen2-vl"), profile, ImageReader(tmp_path),
                                   lf_vision.Pixels())
        assert (row.input_ids, row.labels) == (want["input_ids"], want["labels"]), index
        assert sum(image.tokens for image in row.images) == want["input_ids"].count(processor("qwen2-vl").image_token_id)
    missing = lf_vision.encode_row(0, None, rows[0], processor("qwen2-vl"), profile, ImageReader(tmp_path / "none"),
                                   lf_vision.Pixels())
    assert missing.image_problems and "does not exist" in missing.image_problems[0][1].what
