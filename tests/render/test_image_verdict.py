"""How an image conversation's two prompts are told apart (CT014 moved, CT015 marker, CT016 dropped): on prompts
written here, one per outcome, each beside the prompt that must stay quiet."""

from __future__ import annotations

import pytest

from mldebug_cli.render.diff import ImageProbeResult, ImageVerdict
from mldebug_cli.render.probes import image_probes

MARK = "<|vision_start|><|image_pad|><|vision_end|>"
PROBE = image_probes()[0]  # one image before the question
TRAIN = f"<|im_start|>user\n{MARK}What is in the picture?<|im_end|>\n"
BARE = "<|im_start|>user\nWhat is in the picture?<|im_end|>\n"


@pytest.mark.parametrize(("deploy", "deploy_bare", "verdict"), [
    (TRAIN, BARE, None),  # the same prompt
    (f"<|im_start|>user\n{MARK}\nWhat is in the picture?<|im_end|>\n", BARE, ImageVerdict.MOVED),  # vLLM's "\n"
    (f"<|im_start|>system\nHi<|im_end|>\n<|im_start|>user\n{MARK}\nWhat is in the picture?<|im_end|>\n",
     f"<|im_start|>system\nHi<|im_end|>\n{BARE}", None),  # differs without images too: the text probes' finding
    ("<|im_start|>user\n<image>What is in the picture?<|im_end|>\n", BARE, ImageVerdict.MARKER),
    (f"<|im_start|>user\n{MARK}{MARK}What is in the picture?<|im_end|>\n", BARE, ImageVerdict.MARKER),
    (BARE, BARE, ImageVerdict.DROPPED),
], ids=["same", "newline-after-marker", "differs-without-images", "another-marker", "two-markers", "dropped"])
def test_each_difference_has_one_verdict(deploy, deploy_bare, verdict):
    result = ImageProbeResult(PROBE, 1, MARK, TRAIN, deploy, BARE, deploy_bare)
    assert result.verdict == verdict


def test_a_skipped_conversation_has_no_verdict():
    assert ImageProbeResult(PROBE, 1, MARK, TRAIN, skipped="llamacpp: not emulated").verdict is None
    assert ImageProbeResult(PROBE, 1, MARK, TRAIN, deploy_error="vLLM refuses it").verdict is None


def test_the_first_difference_spans_the_differing_middle():
    result = ImageProbeResult(PROBE, 1, MARK, TRAIN, TRAIN.replace(MARK, MARK + "\n"), BARE, BARE)
    start, train_end, deploy_end = result.first_difference()
    assert (TRAIN[start:train_end], result.deploy_text[start:deploy_end]) == ("", "\n")
