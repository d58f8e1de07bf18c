"""The shared replay of the vision goldens (tools/vl_goldens.py, tools/vl_dpo_goldens.py,
tools/llamafactory_vl_goldens.py): each suite names its golden files, how many cases run without ``-m slow``, the
exceptions of the framework it maps to the checks that name them, and how one case disagrees; the loading, the
sample, the images the tools drew and the wording of a disagreement are here once. A golden file is one case of the
replay test (``cases``), many golden cases each."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet

from mldebug_cli.frameworks.trl.vision import VisionProcessor, VisionRow, load_processor
from support import FIXTURES

# what TRL's collators (SFT and DPO) and the processor raise alike -> the check mldebug reports it with
TRL_REFUSALS = {
    "does not match number of image placeholders": "DS031",
    "tokens in the prompts should be the same as the number of images": "DS031",
    "tokens in the text but no images were passed": "DS031",
    "aspect ratio must be smaller than 200": "DS032",
}


@cache
def goldens(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return json.load(file)


@cache
def processor(folder: str) -> VisionProcessor:
    """The processor of fixtures/processors/<folder>, loaded once for every suite."""
    return load_processor(str(FIXTURES / "processors" / folder))


def image_bytes(spec: dict[str, Any]) -> bytes:
    """The image a golden case describes (its size, mode and colour), as the tools drew it, stored as a dataset
    stores it (PNG; CMYK as JPEG, which PNG cannot hold)."""
    from PIL import Image

    colour = spec["colour"]
    fill: Any = {"RGB": (colour, 255 - colour, colour // 2), "RGBA": (colour, 10, 200, 128), "LA": (colour, 200),
                 "CMYK": (colour, 0, 50, 0)}.get(spec["mode"], colour)
    buffer = io.BytesIO()
    Image.new(spec["mode"], (spec["width"], spec["height"]), fill).save(
        buffer, format="JPEG" if spec["mode"] == "CMYK" else "PNG")
    return buffer.getvalue()


def refusal_code(row: VisionRow) -> str | None:
    """The check a TRL vision row is refused with (None: it trains)."""
    if row.refused is not None:
        return row.refused.code
    if row.image_problems:
        return "DS032"
    if row.cut_images or row.cut_literal > 0:
        return "DS033"
    return None


def ids_differ(mine: list[int], theirs: list[int], who: str) -> str | None:
    """Where mldebug's ids first differ from the framework's (None: they are the same)."""
    if mine == theirs:
        return None
    first = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
    return f"input_ids differ at {first} (mldebug {len(mine)} tokens, {who} {len(theirs)})"


@dataclass(frozen=True)
class VisionSuite:
    """One framework's vision goldens and how a case is replayed against mldebug."""

    folder: Path  # under fixtures/
    pattern: str  # its golden files in the folder
    fast: int  # cases per file replayed without -m slow, evenly spaced
    refusals: Mapping[str, str]  # words of what the framework raises -> the check mldebug reports it with
    disagreement: Callable[[dict[str, Any], str], str | None]  # (case, processor folder) -> what differs, or None
    slow_only: frozenset[str] = frozenset()  # files whose processor takes seconds to load: no fast-tier sample

    @property
    def files(self) -> list[str]:
        return sorted(p.name for p in self.folder.glob(self.pattern))

    def goldens(self, name: str) -> dict[str, Any]:
        return goldens(self.folder / name)

    def wanted(self, error: str) -> str:
        """The check that names what the framework raised ("unnamed": none does)."""
        return next((code for words, code in self.refusals.items() if words in error), "unnamed")

    def unnamed(self, name: str) -> set[str]:
        return {c["error"] for c in self.goldens(name)["cases"] if "error" in c and self.wanted(c["error"]) == "unnamed"}

    def problems(self, name: str, slow: bool) -> list[str]:
        """The disagreements on every case (``slow``), else on the fast sample."""
        doc = self.goldens(name)
        total = len(doc["cases"])
        indices = range(total) if slow else list(range(0, total, max(1, total // self.fast)))[: self.fast]
        return [f"{name} case {i}: {d}" for i in indices if (d := self.disagreement(doc["cases"][i], doc["processor"]))]

    def check(self, name: str, slow: bool) -> None:
        problems = self.problems(name, slow)
        if slow:
            assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
        assert not problems, "\n".join(problems[:10])

    def cases(self) -> list[ParameterSet]:
        """Per golden file: every refusal is named and a sample of cases agrees (the fast tier, but for the files of
        ``slow_only``), every case agrees (slow)."""
        named = [pytest.param(("named", name), id=f"named:{name}") for name in self.files]
        sample = [pytest.param(("sample", name), id=f"sample:{name}") for name in self.files if name not in self.slow_only]
        every = [pytest.param(("every", name), id=f"every:{name}", marks=pytest.mark.slow) for name in self.files]
        return [*named, *sample, *every]

    def replay(self, case: tuple[str, str], tmp_path: Path) -> None:
        kind, name = case
        if kind == "named":
            assert not self.unnamed(name)
        else:
            self.check(name, slow=kind == "every")
