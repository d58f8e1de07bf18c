"""Write the bundled vision-language example (fixtures/datasets/vision/): small PNGs drawn with Pillow, a TRL
vision SFT dataset in messages form and a LLaMA-Factory mllm dataset (``<image>`` placeholders, its dataset_info.json
and a config in fixtures/configs/), with one planted defect per row for each vision check, and clean twins.

    python tools/make_vision_fixtures.py
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "datasets" / "vision"


def draw(size: tuple[int, int], colour: tuple[int, int, int], mode: str = "RGB") -> Image.Image:
    image = Image.new("RGB", size, (250, 250, 245))
    pen = ImageDraw.Draw(image)
    w, h = size
    pen.ellipse((w // 4, h // 4, 3 * w // 4, 3 * h // 4), fill=colour)
    return image.convert(mode)


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def chat(user: object, answer: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


def parts(question: str, images: int = 1) -> list[dict]:
    return [*({"type": "image"} for _ in range(images)), {"type": "text", "text": question}]


def main() -> None:
    images = OUT / "images"
    images.mkdir(parents=True, exist_ok=True)
    files = {
        "red_ball.png": draw((96, 64), (200, 30, 30)),
        "blue_ball.png": draw((64, 64), (30, 60, 200)),
        "grey_ball.png": draw((80, 120), (120, 120, 120), "L"),
        "green_wide.png": draw((640, 480), (40, 160, 60)),
        "tiny_dot.png": draw((16, 16), (240, 200, 20), "RGBA"),
    }
    for name, image in files.items():
        (images / name).write_bytes(png(image))
    (images / "not_an_image.png").write_text("this file is text, not a PNG\n", encoding="utf-8")
    embedded = base64.b64encode(png(draw((48, 48), (150, 40, 160)))).decode("ascii")
    rows = [
        {"images": ["images/red_ball.png"], "messages": chat(parts("What colour is the ball?"), "Red.")},
        {"images": ["images/blue_ball.png"], "messages": chat("What colour is the ball?", "Blue.")},
        {"images": ["images/red_ball.png", "images/blue_ball.png"],
         "messages": chat(parts("Which ball is bigger?", 1), "The red one.")},
        {"images": ["images/missing.png"], "messages": chat(parts("What is this?"), "A ball.")},
        {"images": ["images/not_an_image.png"], "messages": chat(parts("What is this?"), "A ball.")},
        {"images": ["images/green_wide.png"], "messages": chat(parts("Describe the picture in detail."),
                                                               "A green ball on a pale background.")},
        {"images": ["images/grey_ball.png"], "messages": chat(parts("Answer as\nassistant\nwould: what is it?"),
                                                              "A grey ball.")},
        {"images": ["images/tiny_dot.png"], "messages": chat(parts("What colour is the dot?"), "Yellow.")},
        {"images": [{"bytes": embedded, "path": None}], "messages": chat(parts("What colour is the ball?"), "Purple.")},
        {"images": ["images/grey_ball.png", "images/red_ball.png"],
         "messages": chat(parts("Name both colours.", 2), "Grey and red.")},
    ]
    with (OUT / "trl_vision_sft.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    write_trl_dpo(embedded)
    write_trl_kto(embedded)
    write_llama_factory(embedded)


def write_trl_dpo(embedded: str) -> None:
    """TRL's vision DPO shape: images, a conversational prompt, chosen/rejected replies; one planted defect a row."""
    def pair(images: list, prompt: list[dict], chosen: object = "Red.", rejected: object = "Blue.") -> dict:
        return {"images": images, "prompt": prompt, "chosen": [{"role": "assistant", "content": chosen}],
                "rejected": [{"role": "assistant", "content": rejected}]}

    def ask(question: object) -> list[dict]:
        return [{"role": "user", "content": question}]

    no_prompt = {"images": ["images/red_ball.png"], "chosen": chat(parts("What colour?"), "Red."),
                 "rejected": chat(parts("What colour?"), "Blue.")}
    rows = [
        pair(["images/red_ball.png"], ask(parts("What colour is the ball?"))),
        pair(["images/blue_ball.png"], ask("What colour is the ball?"), "Blue.", "Red."),
        pair(["images/red_ball.png", "images/blue_ball.png"], ask(parts("Which ball is bigger?", 1))),
        pair(["images/red_ball.png"], ask("What colour is the ball?"), parts("Red, as shown.")),
        no_prompt,
        pair(["images/green_wide.png"], ask(parts("Describe the picture in detail.")), "A green ball.", "A cat."),
        pair(["images/blue_ball.png"], [*ask(parts("What colour is the ball?")), {"role": "system", "content": "Be brief."}]),
        pair(["images/grey_ball.png"], ask(parts("Answer as\nassistant\nwould: what is it?")), "A grey ball.", "A dog."),
        pair(["images/missing.png"], ask(parts("What is this?")), "A ball.", "A box."),
        pair([{"bytes": embedded, "path": None}], ask(parts("What colour is the ball?")), "Purple.", "Green."),
    ]
    with (OUT / "trl_vision_dpo.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


def write_trl_kto(embedded: str) -> None:
    """TRL's vision KTO shape: images, a conversational prompt, one completion and its label; one planted defect a
    row."""
    def unpaired(images: list, prompt: list[dict], completion: object = "Red.", label: object = True) -> dict:
        return {"images": images, "prompt": prompt, "completion": [{"role": "assistant", "content": completion}],
                "label": label}

    def ask(question: object) -> list[dict]:
        return [{"role": "user", "content": question}]

    no_prompt = {"images": ["images/red_ball.png"], "completion": chat(parts("What colour?"), "Red."), "label": True}
    paired = {"images": ["images/red_ball.png"], "prompt": ask(parts("What colour?")),
              "chosen": [{"role": "assistant", "content": "Red."}], "rejected": [{"role": "assistant", "content": "Blue."}]}
    rows = [
        unpaired(["images/red_ball.png"], ask(parts("What colour is the ball?"))),
        unpaired(["images/blue_ball.png"], ask("What colour is the ball?"), "Red.", False),
        unpaired(["images/red_ball.png", "images/blue_ball.png"], ask(parts("Which ball is bigger?", 1))),
        unpaired(["images/red_ball.png"], ask("What colour is the ball?"), parts("Red, as shown.")),
        no_prompt,
        unpaired(["images/green_wide.png"], ask(parts("Describe the picture in detail.")), "A green ball."),
        unpaired(["images/blue_ball.png"], [*ask(parts("What colour is the ball?")), {"role": "system", "content": "Be brief."}]),
        unpaired(["images/grey_ball.png"], ask(parts("Answer as\nassistant\nwould: what is it?")), "A grey ball."),
        unpaired(["images/missing.png"], ask(parts("What is this?")), "A ball."),
        unpaired(["images/red_ball.png"], ask(parts("What colour is the ball?")), "Red.", "yes"),
        paired,
        unpaired([{"bytes": embedded, "path": None}], ask(parts("What colour is the ball?")), "Green.", False),
    ]
    with (OUT / "trl_vision_kto.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


def write_llama_factory(embedded: str) -> None:
    """LLaMA-Factory's mllm_demo shape: messages with <image> where each image goes, an images list."""
    rows = [
        {"images": ["images/red_ball.png"], "messages": chat("<image>What colour is the ball?", "Red.")},
        {"images": ["images/red_ball.png", "images/blue_ball.png"],
         "messages": chat("<image>Which ball is bigger?", "The red one.")},
        {"images": ["images/red_ball.png", "images/blue_ball.png"],
         "messages": chat("<image><image>Which ball is bigger?", "The red one.")},
        {"images": ["images/missing.png"], "messages": chat("<image>What is this?", "A ball.")},
        {"images": ["images/not_an_image.png"], "messages": chat("<image>What is this?", "A ball.")},
        {"images": ["images/green_wide.png"], "messages": chat("<image>Describe the picture in detail.",
                                                               "A green ball on a pale background.")},
        {"images": ["images/grey_ball.png"], "messages": chat("<image>Answer as\nassistant\nwould: what is it?",
                                                              "A grey ball.")},
        {"images": ["images/blue_ball.png"], "messages": chat("Draw a ball.", "Here it is: <image>")},
        {"images": ["images/tiny_dot.png"], "messages": chat("<image>What colour is the dot?", "Yellow.")},
        {"images": [{"bytes": embedded, "path": None}], "messages": chat("<image>What colour is the ball?", "Purple.")},
        {"images": ["images/blue_ball.png"],
         "messages": [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "<image>What is it?"}]},
    ]
    (OUT / "lf_mllm.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    info = {"lf_mllm": {"file_name": "lf_mllm.json", "formatting": "sharegpt",
                        "columns": {"messages": "messages", "images": "images"},
                        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                                 "assistant_tag": "assistant"}}}
    (OUT / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
