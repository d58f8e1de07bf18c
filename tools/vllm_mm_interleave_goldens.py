"""Goldens for vLLM's chat route on image conversations served with ``--interleave-mm-strings``.

The same run as tools/vllm_mm_goldens.py (vLLM 0.33.0's own ``parse_chat_message_content`` and
``_detect_content_format`` from the wheel's Python files, the model class's ``get_placeholder_str``, the same
hypothesis-drawn conversations over the same processor folders), with ``interleave_strings=True``: what vLLM does
when its server runs with ``--interleave-mm-strings`` (``MultiModalConfig.interleave_mm_strings``). On a "string"
template each image part becomes the model's placeholder where the part is, the text parts joined around it by
"\\n"; a text part that is exactly vLLM's sentinel ``<##IMAGE##>`` takes an image's slot, and more placeholders than
images is vLLM's refusal. The "openai" format is unchanged (the parts go to the template as they are).

    PYTHONPATH=/work/venvs/vllm-src /work/venvs/vllm-chat/bin/python tools/vllm_mm_interleave_goldens.py --cases 3000

(set up as in tools/vllm_mm_goldens.py); writes fixtures/vllm-0.33.0-multimodal/chat-goldens-interleave.json.gz.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vllm_mm_goldens as base  # noqa: E402

SENTINEL = "<##IMAGE##>"  # vLLM's MODALITY_PLACEHOLDERS_MAP["image"], typed by a user as a text part of its own


@st.composite
def case(draw: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """tools/vllm_mm_goldens.py's conversations, now and then with a text part that is vLLM's sentinel itself."""
    generated = draw(base.case(names))
    for message in generated["messages"]:
        if isinstance(message["content"], list) and draw(st.integers(0, 19)) == 0:
            message["content"].insert(draw(st.integers(0, len(message["content"]))), {"type": "text", "text": SENTINEL})
    return generated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    base.INTERLEAVE = True
    pool = base.templates()
    placeholders = {folder: base.placeholder_of(folder) for folder in base.MODELS}
    cases: list[dict[str, Any]] = []

    @settings(max_examples=args.cases, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case(tuple(pool)))
    def collect(generated: dict[str, Any]) -> None:
        if len(cases) >= args.cases:
            return
        template, tok = pool[generated["template"]]
        placeholder = placeholders[generated["template"].split("/")[0]]
        out = base.vllm_conversation(generated["messages"], template, placeholder)
        if "conversation" in out:
            out.update(base.render(template, tok, out["conversation"], generated["add_generation_prompt"]))
        cases.append({**generated, "placeholder": placeholder, **out})

    collect()
    base.write("chat-goldens-interleave.json.gz", {
        "function": "parse_chat_message_content(interleave_strings=True) + _detect_content_format",
        "placeholders": placeholders, "cases": cases})
    errors = sum(1 for c in cases if "error" in c)
    strings = sum(1 for c in cases if c["format"] == "string")
    print(f"{base.OUT}: {len(cases)} cases ({strings} on string templates, {errors} refused by vLLM)")


if __name__ == "__main__":
    sys.exit(main())
