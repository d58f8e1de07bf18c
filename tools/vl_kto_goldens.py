"""Goldens for vision KTO rows: what TRL's own DataCollatorForVisionUnpairedPreference makes of generated rows.

Runs TRL 1.16's ``trl.trainer.kto_trainer.DataCollatorForVisionUnpairedPreference`` (one row per batch, the KL pass
on: KTOConfig's loss_type "kto") with the real processor built from fixtures/processors/<name> (tools/vl_harness.py,
as for tools/vl_goldens.py) on rows that hypothesis generates in the shapes users have: an ``images`` list (or one
``image``), a conversational ``prompt`` with string contents (TRL inserts the images) or content parts with image
placeholders (sometimes too few or too many), a prompt that ends with an assistant turn (continued) or a system turn
(refused), a completion as a string or parts (now and then with an image part, or an unknown role), a ``label`` that
is a bool (now and then an int, a string, null or missing), rows without a prompt or completion column, paired rows
(chosen/rejected: KTOTrainer refuses them), images of every size and mode, and max_length None, 1024 or small. Each
case keeps the row and the ids the collator keeps (attention mask 1) with its completion mask, the label it
collates, and the image tokens the processor's grid implies (what the model's forward compares the kept ids with);
or the exception TRL raised.

    python tools/vl_kto_goldens.py --cases 3000     # writes fixtures/trl-1.16.0-vision/kto-goldens-qwen2-vl.json.gz
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vl_dpo_goldens import content, reply  # noqa: E402
from vl_goldens import image_spec, make_goldens, make_image, text  # noqa: E402

# what KTOTrainer itself raises on a vision dataset with chosen/rejected columns (trl/trainer/kto_trainer.py, before
# the collator runs: the first row decides)
PAIRED = ("ValueError: Vision datasets must be in unpaired format with `completion` and `label` columns. Paired "
          "format (`chosen`/`rejected`) is not supported for vision datasets")


@st.composite
def case(draw: Any) -> dict[str, Any]:
    images = draw(st.lists(image_spec(), min_size=0, max_size=3))
    as_parts = draw(st.booleans())
    placeholders = max(0, len(images) + draw(st.sampled_from((0,) * 14 + (1, -1)))) if as_parts else 0
    prompt: list[dict[str, Any]] = []
    if draw(st.booleans()):
        prompt.append({"role": "system", "content": draw(text())})
    turns = draw(st.integers(1, 3))
    left = placeholders
    for turn in range(turns):
        here = left if turn == turns - 1 else draw(st.integers(0, left))
        left -= here
        role = draw(st.sampled_from(("user",) * 12 + ("human",))) if turn == 0 else "user"
        prompt.append({"role": role, "content": content(draw, as_parts, here)})
        if turn < turns - 1:
            prompt.append({"role": "assistant", "content": draw(text())})
    ending = draw(st.sampled_from(("user",) * 24 + ("assistant", "system")))
    if ending != "user":
        prompt.append({"role": ending, "content": draw(text())})
    label = draw(st.sampled_from((True, False) * 20 + (1, 0, "yes", None, "missing")))
    row: dict[str, Any] = {"prompt": prompt, "completion": reply(draw)}
    if label != "missing":
        row["label"] = label
    shape = draw(st.sampled_from(("unpaired",) * 57 + ("no prompt", "no completion", "paired")))
    if shape == "no prompt":
        del row["prompt"]
    elif shape == "no completion":
        del row["completion"]
    elif shape == "paired":
        row["chosen"], row["rejected"] = row.pop("completion"), reply(draw)
    column = "image" if len(images) == 1 and draw(st.integers(0, 4)) == 0 else "images"
    max_length = draw(st.sampled_from((None, 1024, 1024, "small")))
    if max_length == "small":
        max_length = draw(st.integers(4, 700))
    return {"row": row, "images": images, "column": column, "max_length": max_length}


def run_trl(processor: Any, generated: dict[str, Any]) -> dict[str, Any]:
    from trl.trainer.kto_trainer import DataCollatorForVisionUnpairedPreference

    example = json.loads(json.dumps(generated["row"]))
    if "chosen" in example or "rejected" in example:
        return {"error": PAIRED}
    collator = DataCollatorForVisionUnpairedPreference(processor=processor, max_length=generated["max_length"])
    images = [make_image(s) for s in generated["images"]]
    if generated["column"] == "image":
        example["image"] = images[0]
    else:
        example["images"] = images
    try:
        out = collator([example])
    except Exception as exc:  # noqa: BLE001 - what TRL raises is the golden
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    mask = out["attention_mask"][0].tolist()
    ids = [i for i, m in zip(out["input_ids"][0].tolist(), mask) if m]
    completion = [c for c, m in zip(out["completion_mask"][0].tolist(), mask) if m]
    kl_mask = out["KL_attention_mask"][0].tolist()
    kl_ids = [i for i, m in zip(out["KL_input_ids"][0].tolist(), kl_mask) if m]
    grid = out.get("image_grid_thw")
    merge = processor.image_processor.merge_size
    image_tokens = 0 if grid is None else int(sum(int(t * h * w) for t, h, w in grid.tolist()[:len(images)])) // merge**2
    return {"input_ids": ids, "completion_mask": completion, "label": out["label"].tolist()[0],
            "kl_is_row": kl_ids == ids, "image_tokens": image_tokens}


if __name__ == "__main__":
    make_goldens(__doc__, case, run_trl, lambda processor: f"kto-goldens-{processor}.json.gz",
                 "trl.trainer.kto_trainer.DataCollatorForVisionUnpairedPreference")
