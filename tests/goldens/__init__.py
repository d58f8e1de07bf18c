"""The golden suites: each framework declares, in a module of this folder, how its goldens were made (the tool in
tools/ and its command, where they are stored) and how a case is replayed (goldens.suite.GoldenSuite);
test_golden_replay.py runs every suite declared here. Adding a framework's goldens is its module and one line."""

from __future__ import annotations

from goldens import axolotl, llama_factory, torchtune, transformers, trl, unsloth
from goldens.suite import GoldenSuite

SUITES: tuple[GoldenSuite, ...] = (
    *transformers.SUITES,
    *trl.SUITES,
    *axolotl.SUITES,
    *llama_factory.SUITES,
    *torchtune.SUITES,
    *unsloth.SUITES,
)
