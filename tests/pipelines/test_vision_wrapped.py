"""inspect-data on image rows for processors that wrap or tile each image: Gemma 3 (``<start_of_image>``, 256 soft
tokens, ``<end_of_image>``) and Idefics3/SmolVLM (tiles with row/column tags and a global view), under TRL's SFT
collator. The ids themselves are held to TRL in tests/goldens/trl_vision.py; these tests hold the
views, the checks on a planted row and its quiet twin, and the refusals. Each loads a large tokenizer: slow tier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, write_jsonl

pytestmark = pytest.mark.slow

GEMMA = FIXTURES / "processors" / "gemma-3"
IDEFICS3 = FIXTURES / "processors" / "idefics3"
EXAMPLE = FIXTURES / "datasets" / "vision" / "trl_vision_sft.jsonl"
IMAGES = EXAMPLE.parent / "images"
SOFT, BOI, EOI = 262144, 255999, 256000
FAKE, IMAGE = 128256, 128257


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["inspect-data", *args])
    return result.exit_code, result.stdout, result.stderr


def codes(out: str) -> set[str]:
    return {f["code"] for f in json.loads(out)["findings"]}


def test_gemma3_wraps_each_image_and_trains_its_soft_tokens() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(GEMMA), "--rows", "0", "-f", "json")
    row = json.loads(out)["rows"][0]
    [image] = row["images"]
    start, tokens = image["start"], image["tokens"]
    assert tokens == 256 and (image["resized_width"], image["resized_height"]) == (896, 896)
    assert row["input_ids"][start - 1] == BOI and row["input_ids"][start + tokens] == EOI
    assert row["input_ids"][start:start + tokens] == [SOFT] * 256
    assert row["labels"] == row["input_ids"]  # TRL's collator trains every token, the image's included


def test_gemma3_text_view_shows_the_soft_tokens_as_one_block() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(GEMMA), "--rows", "5", "--color", "never")
    assert "image 0: images/green_wide.png, 640x480 RGB, resized to 896x896, 256 tokens at 5-260" in out
    assert "[image 0: 256 tokens <image_soft_token>]" in out
    assert "<image_soft_token> ×256 (image 0)" in out and "<end_of_image>" in out


def test_gemma3_cut_inside_an_image_is_an_error_and_its_twin_is_quiet() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(GEMMA), "--rows", "0", "--max-length", "100", "-f", "json")
    assert code == 1 and "DS033" in codes(out)
    code, out, _ = run(str(EXAMPLE), "-t", str(GEMMA), "--rows", "0", "--max-length", "1024", "-f", "json")
    assert "DS033" not in codes(out)


def test_a_soft_token_typed_into_the_text_and_cut_is_named(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    reply = "See <image_soft_token> here." + " more" * 40
    write_jsonl(data, [{"images": [], "messages": [{"role": "user", "content": "Hi"},
                                                   {"role": "assistant", "content": reply}]}])
    code, out, _ = run(str(data), "-t", str(GEMMA), "--max-length", "12", "-f", "json")
    found = [f for f in json.loads(out)["findings"] if f["code"] == "DS033"]
    assert code == 1 and "1 <image_soft_token> token(s) written in the row's text" in found[0]["message"]
    code, out, _ = run(str(data), "-t", str(GEMMA), "--max-length", "200", "-f", "json")
    assert "DS033" not in codes(out)


def _pan_and_scan_folder(tmp_path: Path) -> Path:
    """The Gemma 3 processor fixture with ``do_pan_and_scan`` on (its tokenizer and template linked, not copied)."""
    folder = tmp_path / "gemma"
    folder.mkdir(exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if not (folder / name).exists():
            (folder / name).symlink_to(GEMMA / name)
    config = json.loads((GEMMA / "processor_config.json").read_text(encoding="utf-8"))
    config["image_processor"]["do_pan_and_scan"] = True
    (folder / "processor_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_gemma3_pan_and_scan_in_the_config_makes_no_crops_and_says_so(tmp_path: Path) -> None:
    folder = _pan_and_scan_folder(tmp_path)
    code, out, _ = run(str(EXAMPLE), "-t", str(folder), "--rows", "5", "-f", "json")
    report = json.loads(out)
    row = report["rows"][0]
    assert row["input_ids"].count(SOFT) == 256 and row["input_ids"].count(BOI) == 1  # 640x480: no crops
    assert "do_pan_and_scan: true is not applied" in report["context"]["processor"]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(sizes=st.lists(st.tuples(st.integers(1, 2400), st.integers(1, 2400)), min_size=1, max_size=2))
def test_gemma3_with_pan_and_scan_on_ids_equal_the_processor_as_trl_calls_it(tmp_path_factory, sizes) -> None:
    """The processor called as TRL 1.16's collator calls it (no pan-and-scan argument) makes no crops even with
    do_pan_and_scan true in its folder; mldebug's ids equal its own for drawn image sizes, wide and tall ones
    included (which would be cropped were it applied)."""
    from PIL import Image

    from mldebug_cli.frameworks.trl.vision import VisionRow, expand_images, load_processor
    from mldebug_cli.sources.images import ImageInfo

    processor = load_processor(str(_pan_and_scan_folder(tmp_path_factory.mktemp("pas"))))
    boi = processor.image_placeholder
    text = f"<start_of_turn>user\n{boi} and {boi * (len(sizes) - 1)} what?<end_of_turn>\n"
    images = [Image.new("RGB", (w, h), (200, 30, 30)) for w, h in sizes]
    real = processor.processor(text=[text], images=[images], add_special_tokens=False)["input_ids"][0]
    row = VisionRow(0, None, text=text)
    expand_images(row, [ImageInfo(f"{w}x{h}", w, h, "RGB", "PNG") for w, h in sizes], processor, None)
    assert row.input_ids == list(real)


def test_idefics3_splits_an_image_into_tagged_tiles_and_a_global_view() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(IDEFICS3), "--rows", "5", "--max-length", "4000", "-f", "json")
    row = json.loads(out)["rows"][0]
    [image] = row["images"]  # 640x480: scaled to 1456x1092, 3 rows x 4 columns of 364-pixel tiles, + the global view
    assert (image["resized_width"], image["resized_height"]) == (1456, 1092)
    block = row["input_ids"][image["start"]:image["start"] + image["tokens"]]
    assert block[0] == FAKE and block[-1] == FAKE
    assert block.count(IMAGE) == 13 * 169 == row["input_ids"].count(IMAGE)
    pieces = row["pieces"][image["start"]:image["start"] + image["tokens"]]
    assert [p for p in pieces if p.startswith("<row_")] == [f"<row_{r}_col_{c}>" for r in (1, 2, 3) for c in (1, 2, 3, 4)]
    assert "<global-img>" in pieces


def test_idefics3_cut_inside_the_tiles_is_an_error_and_its_twin_is_quiet() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(IDEFICS3), "--rows", "5", "--max-length", "1024", "-f", "json")
    found = [f for f in json.loads(out)["findings"] if f["code"] == "DS033"]
    assert code == 1 and "Idefics3Processor raises TypeError" in found[0]["message"]
    code, out, _ = run(str(EXAMPLE), "-t", str(IDEFICS3), "--rows", "5", "--max-length", "4000", "-f", "json")
    assert "DS033" not in codes(out)


def test_llama_factory_refuses_a_processor_its_plugin_is_not_emulated_for() -> None:
    code, _, err = run(str(FIXTURES / "datasets" / "vision" / "lf_mllm.json"), "-t", str(GEMMA), "--framework",
                       "llama-factory", "--template", "qwen2_vl")
    assert code == 2 and "Gemma3Processor" in err
