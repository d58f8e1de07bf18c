"""transformers' goldens (--framework transformers, the bare Trainer): content parts as apply_chat_template hands
them to the template (content_parts.py), and the rows the real Trainer trains in each optimizer step
(tools/batch_plan_goldens.py: fixtures/batch-plan/hf-trainer.jsonl, hypothesis-generated configs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet

from goldens import content_parts
from goldens.suite import GoldenSuite
from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings
from support import FIXTURES

BATCH_PLAN = FIXTURES / "batch-plan" / "hf-trainer.jsonl"
HEADER, *CONFIGS = [json.loads(line) for line in BATCH_PLAN.read_text().splitlines()]
SAMPLE = CONFIGS[::12]  # the fast tier's configs; every config in the slow tier


def replay_content_parts(tokenizer: str, tmp_path: Path) -> None:
    """A bare Trainer's user calls apply_chat_template on the messages as they are: Llama 3 prints each list's repr
    (trained), Qwen2.5, Qwen3 and Mistral-Nemo raise on every list; rows without an assistant turn are trained whole."""
    doc = content_parts.inspect("transformers", tokenizer)
    content_parts.agree(doc, content_parts.golden("transformers")[tokenizer])
    assert content_parts.weighted_rows(doc) == set(content_parts.WEIGHTED)


def config_id(config: dict[str, Any]) -> str:
    return f"n{config['rows']}-b{config['micro_batch_size']}-w{config['world_size']}"


def plan_cases() -> list[ParameterSet]:
    """The sample (fast tier) and then every config (slow): the sample's configs run in both tiers."""
    return [*(pytest.param(c, id=f"sample:{config_id(c)}") for c in SAMPLE),
            *(pytest.param(c, id=f"every:{config_id(c)}", marks=pytest.mark.slow) for c in CONFIGS)]


def plan_of(config: dict[str, Any]) -> BatchPlan:
    return BatchPlan(SamplerSettings(
        samples=config["rows"], micro_batch_size=config["micro_batch_size"],
        gradient_accumulation_steps=config["gradient_accumulation_steps"], world_size=config["world_size"],
        seed=config["seed"], data_seed=config["data_seed"], shuffle=config["shuffle"], drop_last=config["drop_last"],
        epochs=config["epochs"], max_steps=config["max_steps"]))


def replay_plan(config: dict[str, Any], tmp_path: Path) -> None:
    want = config["steps"]
    plan = plan_of(config)
    got = []
    for step in plan.steps():
        if len(got) == len(want):
            break
        got.append([[list(batch) for batch in rank] for rank in step.micro_batches])
    settings = {k: v for k, v in config.items() if k != "steps"}
    for number, (mine, theirs) in enumerate(zip(got, want), start=1):
        assert mine == theirs, f"{settings}: step {number} differs: {mine} vs the Trainer's {theirs}"
        assert plan.step(number) is not None and [[list(b) for b in r] for r in plan.step(number).micro_batches] == theirs
    assert len(got) == len(want), f"{settings}: {len(got)} steps vs the Trainer's {len(want)}"
    if len(want) < 48:  # the Trainer ran to its end (48 steps are recorded at most)
        assert plan.total_steps == len(want), f"{settings}: total {plan.total_steps} vs {len(want)}"
        assert plan.step(len(want) + 1) is None


SUITES = (
    GoldenSuite("transformers-content-parts", "transformers", content_parts.TOOL,
                "python tools/content_parts_goldens.py transformers", content_parts.GOLDENS,
                lambda: content_parts.cases("transformers"), replay_content_parts),
    GoldenSuite("transformers-batch-plan", "transformers", "tools/batch_plan_goldens.py",
                "nice -n 10 python tools/batch_plan_goldens.py --configs 240 --out fixtures/batch-plan/hf-trainer.jsonl",
                BATCH_PLAN, plan_cases, replay_plan, keep=None),
)
