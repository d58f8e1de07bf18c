"""inspect-data on TRL vision SFT rows: the bundled example end to end, the views (one line per image, its tokens as
one block), bounded image reading, and the settings TRL refuses on image rows."""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.sources.images import MAX_IMAGE_PIXELS, ImageProblem, ImageReader, read_info
from support import FIXTURES, QWEN25, write_jsonl

PROCESSOR = FIXTURES / "processors" / "qwen2-vl"
EXAMPLE = FIXTURES / "datasets" / "vision" / "trl_vision_sft.jsonl"
IMAGES = EXAMPLE.parent / "images"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["inspect-data", *args])
    return result.exit_code, result.stdout, result.stderr


def png(width: int, height: int, mode: str = "RGB") -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new(mode, (width, height)).save(buffer, format="PNG")
    return buffer.getvalue()


def with_size(data: bytes, width: int, height: int) -> bytes:
    """A PNG whose header claims another size (a decompression bomb costs nothing to write)."""
    ihdr = bytearray(data[16:29])
    ihdr[0:8] = struct.pack(">II", width, height)
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + bytes(ihdr)) & 0xFFFFFFFF)
    return data[:16] + bytes(ihdr) + crc + data[33:]


def test_the_bundled_example_fires_each_check_on_its_row() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(PROCESSOR), "--max-length", "300", "--all", "-f", "json")
    doc = json.loads(out)
    assert code == 1  # errors at the default --fail-on
    fired = {(f["code"], f["location"]["row"]) for f in doc["findings"]}
    assert {("DS031", 2), ("DS032", 3), ("DS032", 4), ("DS033", 5), ("DS036", 5), ("DS035", 6), ("DS037", 7)} <= fired
    assert {code for code, _ in fired} == {"DS031", "DS032", "DS033", "DS034", "DS035", "DS036", "DS037"}
    assert not any(row in (0, 1, 8, 9) for c, row in fired if c != "DS034")  # the twins stay quiet


def test_json_rows_carry_each_image_with_its_tokens() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(PROCESSOR), "--rows", "9", "-f", "json")
    row = json.loads(out)["rows"][0]
    images = row["images"]
    assert [(i["width"], i["height"], i["mode"]) for i in images] == [(80, 120, "L"), (96, 64, "RGB")]
    for image in images:
        block = row["input_ids"][image["start"]:image["start"] + image["tokens"]]
        assert block == [151655] * image["tokens"]  # <|image_pad|>
        assert row["labels"][image["start"]:image["start"] + image["tokens"]] == block  # TRL trains them
    assert row["input_ids"].count(151655) == sum(i["tokens"] for i in images)


def test_text_view_shows_an_image_as_one_line_and_one_block() -> None:
    code, out, _ = run(str(EXAMPLE), "-t", str(PROCESSOR), "--rows", "5", "--color", "never")
    assert "image 0: images/green_wide.png, 640x480 RGB, resized to 644x476, 391 tokens at 15-405" in out
    assert "[image 0: 391 tokens <|image_pad|>]" in out
    assert "<|image_pad|> ×391 (image 0)" in out
    assert out.count("<|image_pad|>") < 10  # not one line per token


def test_html_view_lists_the_images(tmp_path: Path) -> None:
    page = tmp_path / "rows.html"
    code, _, _ = run(str(EXAMPLE), "-t", str(PROCESSOR), "--rows", "9", "-f", "html", "-o", str(page))
    html = page.read_text(encoding="utf-8")
    assert '<ul class="images"><li>image 0: images/grey_ball.png, 80x120 L, resized to 84x112, 12 tokens' in html
    assert html.count('data-id="151655"') == 2  # one chip per image


def test_image_rows_need_the_processor_files(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    write_jsonl(data, [{"images": [str(IMAGES / "red_ball.png")], "messages": [{"role": "user", "content": "Hi"}]}])
    code, _, err = run(str(data), "-t", str(QWEN25))
    assert code == 2 and "no processor files" in err


@pytest.mark.parametrize("flags, words", [(["--truncation-mode", "keep_end"], "keep_end"),
                                          (["--train-on", "assistant"], "not emulated")])
def test_settings_trl_refuses_on_image_rows(flags: list[str], words: str) -> None:
    code, _, err = run(str(EXAMPLE), "-t", str(PROCESSOR), *flags)
    assert code == 2 and words in err


def test_a_decompression_bomb_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    bomb = with_size(png(8, 8), 40_000, 40_000)
    (tmp_path / "bomb.png").write_bytes(bomb)
    with pytest.raises(ImageProblem, match="decompression bomb"):
        read_info("bomb.png", tmp_path)
    over = with_size(png(8, 8), 10_000, 9_000)
    assert MAX_IMAGE_PIXELS < 10_000 * 9_000
    with pytest.raises(ImageProblem, match="pixel limit|decompression bomb"):
        read_info({"bytes": base64.b64encode(over).decode()}, tmp_path)


def test_a_truncated_file_is_unreadable(tmp_path: Path) -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((64, 64), 40).convert("RGB").save(buffer, format="PNG")
    (tmp_path / "cut.png").write_bytes(buffer.getvalue()[:300])
    with pytest.raises(ImageProblem, match="cannot be decoded"):
        read_info("cut.png", tmp_path)


def test_an_image_used_by_many_rows_is_read_once(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png(30, 20))
    reader = ImageReader(tmp_path)
    first = reader.info("a.png")
    (tmp_path / "a.png").unlink()
    assert reader.info("a.png") == first
    assert (first.width, first.height) == (30, 20)


def test_the_input_file_is_not_modified() -> None:
    before = EXAMPLE.read_bytes()
    run(str(EXAMPLE), "-t", str(PROCESSOR))
    assert EXAMPLE.read_bytes() == before


@pytest.mark.parametrize("flags, says", [(["--framework", "axolotl", "--task", "kto"], "vision-language model"),
                                         (["--task", "grpo"], "GRPOTrainer takes them")])
def test_image_rows_elsewhere_are_refused_by_name_not_read_as_text(flags: list[str], says: str) -> None:
    code, _, err = run(str(EXAMPLE), "-t", str(PROCESSOR), *flags)
    assert code == 2 and "the rows have images" in err and says in " ".join(err.split())


def test_parquet_with_the_datasets_image_feature(tmp_path: Path) -> None:
    from datasets import Dataset, Image, Sequence

    chat = [{"role": "user", "content": "What?"}, {"role": "assistant", "content": "A ball."}]
    rows = {"images": [[{"bytes": png(64, 32), "path": None}], [{"bytes": None, "path": str(IMAGES / "red_ball.png")}]],
            "messages": [chat, chat]}
    Dataset.from_dict(rows).cast_column("images", Sequence(Image())).to_parquet(str(tmp_path / "rows.parquet"))
    code, out, _ = run(str(tmp_path / "rows.parquet"), "-t", str(PROCESSOR), "--rows", "0,1", "-f", "json")
    shown = json.loads(out)["rows"]
    assert [(i["width"], i["height"], i["tokens"]) for r in shown for i in r["images"]] == [(64, 32, 6), (96, 64, 6)]


def test_preflight_reads_image_rows_from_a_trl_config(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"model_name_or_path: {PROCESSOR}\ndataset_name: {EXAMPLE}\nmax_length: 300\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["preflight", str(config), "-f", "json"])
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert result.exit_code == 1 and {"DS031", "DS032", "DS033", "DS036"} <= codes
    config.write_text(f"model_name_or_path: {PROCESSOR}\ndataset_name: {EXAMPLE}\npacking: true\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["preflight", str(config)])
    assert "Packing is not supported for vision datasets" in result.stdout + result.stderr


DPO_EXAMPLE = FIXTURES / "datasets" / "vision" / "trl_vision_dpo.jsonl"


@pytest.mark.slow
def test_the_bundled_dpo_example_fires_each_check_on_its_row() -> None:
    code, out, _ = run(str(DPO_EXAMPLE), "-t", str(PROCESSOR), "--max-length", "300", "--all", "-f", "json")
    doc = json.loads(out)
    assert code == 1
    fired = {(f["code"], f["location"]["row"], f["location"].get("side")) for f in doc["findings"]}
    assert fired == {("DS031", 2, None), ("DS031", 3, None), ("DS010", 4, None), ("DS033", 5, "chosen"),
                     ("DS033", 5, "rejected"), ("DS036", 5, "chosen"), ("DS036", 5, "rejected"), ("DS011", 6, None),
                     ("DS035", 7, None), ("DS032", 8, None)}
    assert "chosen: 0 image(s) and 1 image placeholder(s)" in next(f["message"] for f in doc["findings"]
                                                                  if f["location"]["row"] == 3)


@pytest.mark.slow
def test_a_dpo_row_shows_both_sides_with_only_the_replies_trained() -> None:
    code, out, _ = run(str(DPO_EXAMPLE), "-t", str(PROCESSOR), "--rows", "0", "-f", "json")
    chosen, rejected = json.loads(out)["rows"]
    assert (chosen["side"], rejected["side"]) == ("chosen", "rejected")
    image = chosen["images"][0]
    assert image["tokens"] == 6 and rejected["images"] == chosen["images"]
    prompt = image["start"] + image["tokens"]
    assert chosen["input_ids"][:prompt] == rejected["input_ids"][:prompt]  # one prompt, its image included
    trained = [p for p, (label, token) in enumerate(zip(chosen["labels"], chosen["input_ids"])) if label == token]
    assert trained and trained[0] > prompt and all(label == -100 for label in chosen["labels"][:trained[0]])
    assert "".join(chosen["pieces"][trained[0]:]).startswith("Red")
    code, out, _ = run(str(DPO_EXAMPLE), "-t", str(PROCESSOR), "--rows", "0")
    assert "row 0 chosen" in out and "row 0 rejected" in out


KTO_EXAMPLE = FIXTURES / "datasets" / "vision" / "trl_vision_kto.jsonl"


@pytest.mark.slow
def test_the_bundled_kto_example_fires_each_check_on_its_row_and_trains_only_the_completion() -> None:
    code, out, _ = run(str(KTO_EXAMPLE), "-t", str(PROCESSOR), "--max-length", "300", "--all", "--show", "12",
                       "-f", "json")
    doc = json.loads(out)
    assert code == 1 and "DataCollatorForVisionUnpairedPreference" in doc["context"]["framework"]
    fired = {(f["code"], f["location"]["row"]) for f in doc["findings"]}
    assert fired == {("DS031", 2), ("DS031", 3), ("DS010", 4), ("DS033", 5), ("DS036", 5), ("DS011", 6),
                     ("DS035", 7), ("DS032", 8), ("DS010", 9), ("DS010", 10)}
    messages = {f["location"]["row"]: f["message"] for f in doc["findings"] if f["code"] == "DS010"}
    assert "label is a str" in messages[9] and "KTOTrainer raises ValueError" in messages[10]
    clean = [row for row in doc["rows"] if row["row"] in (0, 1, 11)]
    assert len(clean) == 3
    for row in clean:  # the clean twins: one image's tokens in the prompt, only the completion trained
        [image] = row["images"]
        trained = [p for p, (label, token) in enumerate(zip(row["labels"], row["input_ids"])) if label == token]
        assert trained and trained[0] > image["start"] + image["tokens"]
        assert all(label == -100 for label in row["labels"][:trained[0]])
        assert "".join(row["pieces"][trained[0]:]).startswith(("Red", "Green"))


def test_axolotl_preference_rows_with_images_are_refused_as_its_trainer_refuses_them() -> None:
    code, _, err = run(str(DPO_EXAMPLE), "-t", str(PROCESSOR), "--framework", "axolotl")
    assert code == 2
    assert "axolotl's dpo run does not start on them" in err and "does not seem to be a vision-language model" in err


LF_EXAMPLE = FIXTURES / "datasets" / "vision" / "lf_mllm.json"
LF_CONFIG = FIXTURES / "preflight" / "llama-factory-vision" / "config.yaml"


def test_the_bundled_llama_factory_example_fires_each_check_on_its_row() -> None:
    code, out, _ = run("--config", str(LF_CONFIG), "--all", "--show", "11", "-f", "json")
    doc = json.loads(out)
    assert code == 1
    assert doc["context"]["chat_template"].startswith("LLaMA-Factory's template 'qwen2_vl'")
    assert "image_max_pixels 262,144" in doc["context"]["framework"]  # read from the config
    fired = {(f["code"], f["location"]["row"]) for f in doc["findings"]}
    assert fired == {("DS031", 1), ("DS032", 3), ("DS032", 4), ("DS033", 5), ("DS036", 5), ("DS035", 6),
                     ("DS034", 7), ("DS037", 8), ("DS010", 10)}
    rows = {r["row"]: r for r in doc["rows"]}
    [image] = rows[0]["images"]  # 96x64: within image_max_pixels, the image processor makes it 84x56, 6 tokens
    assert (image["width"], image["height"], image["tokens"]) == (96, 64, 6)
    labels = rows[0]["labels"]
    assert all(label == -100 for label in labels[:image["start"] + image["tokens"]])  # the prompt's image is masked


def test_llama_factory_image_rows_need_a_template_with_an_mm_plugin() -> None:
    code, _, err = run(str(LF_EXAMPLE), "-t", str(PROCESSOR), "--framework", "llama-factory", "--template", "qwen")
    assert code == 2
    assert "does not support image input" in err and "qwen2_vl" in err


AX_CONFIG = FIXTURES / "preflight" / "axolotl-vision" / "config.yml"


def test_the_bundled_axolotl_example_fires_each_check_on_its_row() -> None:
    code, out, _ = run("--config", str(AX_CONFIG), "--all", "--show", "10", "-f", "json")
    doc = json.loads(out)
    assert code == 1
    assert doc["context"]["chat_template"] == "axolotl's 'qwen2_vl' template"
    assert "(qwen2_vl strategy)" in doc["context"]["framework"]
    fired = {(f["code"], f["location"]["row"]) for f in doc["findings"]}
    # row 2: two images, the first used; 5: a placeholder and no image (trained, the forward fails); 6: a literal
    # <|image_pad|> beside the image; rows 0, 1, 8 are the twins (one image each, string contents, ShareGPT turns)
    assert fired == {("DS067", 2), ("DS032", 3), ("DS032", 4), ("DS031", 5), ("DS031", 6), ("DS035", 7), ("DS037", 9)}
    rows = {r["row"]: r for r in doc["rows"]}
    for row, reply in ((0, "Red."), (1, "Blue."), (8, "A wide green ball.")):
        trained = "".join(p for p, label in zip(rows[row]["pieces"], rows[row]["labels"]) if label != -100)
        assert trained.replace("\u0120", " ") == reply + "<|im_end|>"  # the reply and its end marker, no image token
    [image] = rows[1]["images"]  # string contents: the image goes after the first user message's text
    assert "".join(rows[1]["pieces"][:image["start"]]).endswith("ball?<|vision_start|>")


@pytest.mark.slow  # each loads the processor: seconds
@pytest.mark.parametrize("line, says", [("sample_packing: true", "sample_packing on image rows is not emulated"),
                                        ("skip_prepare_dataset: false", "without skip_prepare_dataset: true"),
                                        ("processor_type: null", "the config sets no processor_type"),
                                        ("chat_template: qwen3_5", "processing strategy is not emulated")])
def test_axolotl_image_settings_it_does_not_emulate_are_refused_by_name(tmp_path: Path, line: str, says: str) -> None:
    key = line.split(":")[0]
    text = "\n".join(k for k in AX_CONFIG.read_text(encoding="utf-8").splitlines() if not k.startswith(key + ":"))
    config = tmp_path / "config.yml"
    config.write_text(text.replace("../../", f"{FIXTURES}/") + "\n" + line + "\n", encoding="utf-8")
    code, _, err = run("--config", str(config), "--all")
    assert code == 2 and says in " ".join(err.split())


@pytest.mark.slow  # the Idefics3 processor takes seconds to load
def test_axolotl_image_rows_with_a_processor_not_checked_against_axolotl_are_refused() -> None:
    code, _, err = run(str(FIXTURES / "datasets" / "vision" / "axolotl_mm.jsonl"), "-t",
                       str(FIXTURES / "processors" / "idefics3"), "--framework", "axolotl")
    assert code == 2 and "Idefics3Processor" in err and "LlavaProcessor" in err
