"""ShareGPT tool rows under axolotl whose function_call/observation tags the config does not map (issue 34 item 7):
axolotl hands the tags to the chat template as roles. mldebug's ids and labels, and the rows it says the template
raises on, equal axolotl 0.19.0's own (fixtures/axolotl-unmapped-roles/, tools/axolotl_unmapped_roles_golden.py, on
the corpus's glaive rows); where the template raises, one finding says the run will not start."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, GLAIVE, needs_corpus

GOLDENS = json.loads((FIXTURES / "axolotl-unmapped-roles" / "goldens.json").read_text(encoding="utf-8"))
pytestmark = [needs_corpus, pytest.mark.slow]  # 300 rows through a real tokenizer: 30-60 s on 2 shared cores


def inspect(tmp_path, template: str) -> dict:
    case = GOLDENS["cases"][template]
    config = {"base_model": str(FIXTURES / case["tokenizer"]), "chat_template": template, "sequence_len": 100_000,
              "micro_batch_size": 1, "datasets": [{"path": str(GLAIVE), "type": "chat_template", **GOLDENS["entry"]}]}
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = CliRunner().invoke(app, ["inspect-data", "--config", str(path), "--allow-outside-paths", "--all",
                                      "--show", "300", "-f", "json", "--exit-zero"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def digest(row: dict) -> str:
    return hashlib.sha1(json.dumps([row["input_ids"], row["labels"]], separators=(",", ":")).encode()).hexdigest()[:16]


@pytest.mark.parametrize("template", sorted(GOLDENS["cases"]))
def test_unmapped_tool_tags_reach_the_template_as_axolotl_hands_them_over(tmp_path, template):
    doc = inspect(tmp_path, template)
    want = GOLDENS["cases"][template]["rows"]
    raised = {f["location"]["row"] for f in doc["findings"]
              if f["code"] == "DS009" and f["location"].get("row") is not None}
    assert raised == {n for n, r in enumerate(want) if "error" in r}
    shown = {r["row"]: r for r in doc["rows"] if r.get("input_ids")}
    assert shown and all(digest(shown[n]) == want[n]["digest"] for n in shown)
    stops = [f["message"] for f in doc["findings"] if f["code"] == "DS009" and f["location"].get("row") is None]
    if raised:  # Gemma 3: one row stops axolotl's dataset map
        assert len(stops) == 1 and stops[0].startswith("the run will not start: axolotl tokenizes every row")
    else:  # ChatML renders the tags as roles; mldebug says the template does not know them
        assert not stops and {f["code"] for f in doc["findings"]} >= {"DS011"}
