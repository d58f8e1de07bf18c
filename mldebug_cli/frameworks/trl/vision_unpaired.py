"""TRL's vision KTO path: how KTOTrainer (TRL 1.16) turns an unpaired preference row with images into its sequence.

What TRL does (``trl/trainer/kto_trainer.py`` DataCollatorForVisionUnpairedPreference and KTOTrainer.__init__,
``trl/data_utils.py`` apply_chat_template), checked row for row against TRL itself (tests/goldens/trl_vision.py,
suite trl-vision-kto):

- A dataset whose first row has an ``image`` or ``images`` column is a vision dataset: nothing is prepared ahead (no
  row dropped, no prompt extracted); the collator processes each batch. A first row with ``chosen``/``rejected``
  columns raises ValueError (vision datasets must be unpaired: prompt, completion and label);
  ``precompute_ref_log_probs`` raises ValueError, ``pad_to_multiple_of`` NotImplementedError.
- The prompt gets the images (prepare_multimodal_messages, as for SFT); the completion is prepared with none, so an
  image part there raises the placeholder-count ValueError. A row without ``prompt`` or ``completion`` raises
  KeyError.
- The prompt is rendered with the generation prompt (continued after an assistant turn; any other last role raises
  ValueError), then cut to what it shares with the rendered prompt+completion; the completion is the rest.
- The processor tokenizes the prompt with the row's images (each placeholder expanded into its tokens) and the
  completion alone with none; the sequence is prompt ids + completion ids cut to ``max_length`` (1024 by default),
  and only the completion's tokens are trained (``completion_mask``).
- ``label`` becomes a tensor after all that: a missing one raises KeyError, a string or null one raises in
  ``torch.tensor``; a bool or a number is collated as it is.
- The KL pass (loss_type "kto") pairs each prompt with the batch's previous completion (the last one for the first
  row): the same prompt ids, so the same image tokens, cut at the same ``max_length``.
- The cut never raises in the collator: a cut inside an image's tokens fails in the model's forward ("Image features
  and image tokens do not match", re-raised by KTOTrainer as a too-short ``max_length``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.registry import Code
from mldebug_cli.frameworks.framework import VisionPath
from mldebug_cli.frameworks.trl.vision import (
    DEFAULT_MAX_LENGTH,
    EMULATED_TRL,
    RowRefused,
    VisionProcessor,
    VisionRow,
    assistant_header,
    expand_images,
    read_infos,
    record_row,
)
from mldebug_cli.frameworks.trl.vision_preference import prompt_and_replies, reply_row
from mldebug_cli.sources.images import ImageReader

COLLATOR = "DataCollatorForVisionUnpairedPreference"
CUT_CONSEQUENCE = ("the model raises ValueError (Image features and image tokens do not match) at the first batch "
                   "holding the row; TRL's KTOTrainer re-raises it as max_length too short")
PAIRED = ("chosen/rejected columns: TRL's KTOTrainer raises ValueError (Vision datasets must be in unpaired format "
          "with `completion` and `label` columns)")


def encode_unpaired(index: int, line: int | None, raw: Any, processor: VisionProcessor, images_from: ImageReader,
                    max_length: int | None) -> VisionRow:
    """The row's sequence (prompt + completion) as TRL's vision KTO collator makes it; a refusal or image problems
    when it cannot."""
    row = VisionRow(index, line, cut_consequence=CUT_CONSEQUENCE)
    try:
        if isinstance(raw, Mapping) and ("chosen" in raw or "rejected" in raw):
            raise RowRefused(Code.INVALID_MESSAGES, PAIRED, "unpair the rows first (TRL's unpair_preference_dataset): "
                             "one prompt, completion and label per reply")
        messages, prompt_text, (completion,), images = prompt_and_replies(raw, processor, ("completion",), COLLATOR)
    except RowRefused as refused:
        row.refused = refused
        return row
    infos = read_infos(row, images, images_from)
    if row.image_problems:
        return row
    prompt = VisionRow(index, line, text=prompt_text, rendered=prompt_text, messages=messages)
    expand_images(prompt, infos, processor, None)
    if prompt.refused is not None or prompt.image_problems:
        row.refused, row.image_problems, row.rendered = prompt.refused, prompt.image_problems, prompt_text
        return row
    sequence = reply_row(prompt, None, completion, processor, max_length, CUT_CONSEQUENCE)
    if sequence.refused is None:
        sequence.refused = _label_refusal(raw)
    return sequence


def _label_refusal(raw: Mapping[str, Any]) -> RowRefused | None:
    """What ``torch.tensor`` of the batch's labels raises on this row's label (None: it collates)."""
    if "label" not in raw:
        return RowRefused(Code.INVALID_MESSAGES, f"no label column: TRL's {COLLATOR} raises KeyError: 'label'",
                          "give each row a label: true for a desirable completion, false for an undesirable one")
    label = raw["label"]
    if isinstance(label, (bool, int, float)):
        return None
    return RowRefused(Code.INVALID_MESSAGES, f"label is {'null' if label is None else f'a {type(label).__name__}'}: "
                      f"TRL's {COLLATOR} raises in torch.tensor of the batch's labels",
                      "write the label as true (desirable) or false (undesirable)")


# --- inspect-data's vision path (Framework.vision) ------------------------------------------------------------

def vision_path(options: Any, processor: VisionProcessor, base: Path) -> VisionPath:
    """inspect-data's vision path for TRL's KTO collator."""
    if options.train_on not in (None, "completion"):
        raise UsageError(f"--train-on {options.train_on} on image KTO rows is not emulated: TRL's KTO collator trains "
                         "the completion", hint="leave --train-on unset")
    images = ImageReader(base)
    max_length = options.max_length if options.max_length is not None else DEFAULT_MAX_LENGTH
    return VisionPath(
        lambda record: record_row(record, encode_unpaired, processor, images, max_length), max_length,
        assistant_header(processor),
        {"format": "unpaired preference rows with images (TRL vision KTO: images column, prompt/completion messages "
                   "and a label)",
         "chat_template": processor.template_source,
         "framework": f"TRL {EMULATED_TRL} {COLLATOR}: max_length {max_length}, prompt + completion cut at its end, "
                      "no row dropped, the completion's tokens trained (the KL pass pairs each prompt with the "
                      "batch's previous completion)",
         "train_on": "completion"})
