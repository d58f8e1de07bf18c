"""CT checks one by one through the check-template pipeline, on real templates, tokenizers and GGUF vocabs."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from mldebug_cli.core import registry
from mldebug_cli.pipelines.template_check import CheckTemplateOptions, build_report
from support import CORPUS_GGUF, FIXTURES, LLAMACPP_TEMPLATES, NEMO, PHI3, PHI3_DEPLOY, QWEN3, QWEN25, needs_corpus

DEPLOY = FIXTURES / "deploy"
TEMPLATES = LLAMACPP_TEMPLATES


def findings(**options) -> dict[str, list]:
    report = build_report(CheckTemplateOptions(**{k: str(v) if isinstance(v, Path) else v for k, v in options.items()}))
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


def gguf_copy(source: Path, target: Path, **flags: bool) -> Path:
    """A copy of a real GGUF with some tokenizer.ggml.* booleans changed."""
    reader = gguf.GGUFReader(source)
    writer = gguf.GGUFWriter(str(target), arch=reader.fields["general.architecture"].contents())
    keys = {f"tokenizer.ggml.{name}": value for name, value in flags.items()}
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in keys:
            continue
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), field.types[0], sub_type=sub_type)
    for key, value in keys.items():
        writer.add_bool(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


def test_every_ct_check_is_registered_and_documented():
    refs = [r for r in registry.REGISTRY if r.family == "CT"]
    assert [r.code for r in refs] == [f"CT{i:03d}" for i in range(1, 17)]
    expected = {"CT001": ("prompt-mismatch", "error"), "CT002": ("token-mismatch", "error"),
                "CT003": ("deploy-double-bos", "error"), "CT004": ("deploy-missing-bos", "error"),
                "CT005": ("stop-token-missing", "error"), "CT006": ("default-system-prompt-differs", "warning"),
                "CT007": ("generation-prompt-differs", "error"), "CT008": ("whitespace-differs", "warning"),
                "CT009": ("template-fallback", "error"), "CT010": ("engine-unsupported-construct", "warning"),
                "CT011": ("vocab-mismatch", "error"), "CT012": ("date-dependent-template", "info"),
                "CT013": ("deploy-render-fails", "error"), "CT014": ("image-placeholder-moved", "error"),
                "CT015": ("image-marker-differs", "error"), "CT016": ("image-part-dropped", "error")}  # fmt: skip
    for ref in refs:
        check = registry.load(ref)
        assert (check.name, check.severity.value) == expected[ref.code]
        for heading in ("What it finds", "Why it matters for training", "Example", "Fix"):
            assert heading in check.doc, (ref.code, heading)


@needs_corpus
def test_token_identical_probes_report_nothing_even_when_the_text_differs():
    """Mistral-Nemo writes <s>; llama.cpp strips that text and adds the BOS id: same ids, different text."""
    report = build_report(CheckTemplateOptions(train=str(NEMO), deploy=str(TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja"),
                                               deploy_engine="llamacpp"))  # fmt: skip
    assert report.findings == ()
    user = next(p for p in report.details["probes"] if p["name"] == "user")
    assert user["train"] == "<s>" + user["deploy"] and user["identical"]


@needs_corpus
def test_ct001_llamacpp_merges_the_system_message_the_template_cannot_render():
    found = findings(train=PHI3, deploy=CORPUS_GGUF / "ggml-vocab-phi-3.gguf")
    merged = {f.location.probe: f for f in found["CT001"]}
    assert merged["system+user"].message.startswith("2 differences (system-block)")
    assert "deploy \"⟨<|user|>⟩↵Answer·in·one·short" in merged["system+user"].message
    # Phi-3's first template always ends with the assistant header, even without a generation prompt
    assert merged["generation-prompt-off"].message.startswith("1 difference (role-marker)")
    assert [f.location.probe for f in found["CT004"]] == ["user"]
    assert "llamacpp adds it (add_bos_token is true)" in found["CT004"][0].message


@needs_corpus
def test_ct002_a_gguf_that_adds_eos_to_every_prompt(tmp_path: Path):
    adds_eos = gguf_copy(PHI3_DEPLOY / "phi-3-mini-instruct.gguf", tmp_path / "adds-eos.gguf", add_eos_token=True)
    found = findings(train=PHI3, deploy=adds_eos)
    assert set(found) == {"CT002"}
    probes = [f.location.probe for f in found["CT002"]]
    assert "user" in probes and "assistant-last" not in probes  # llama.cpp strips the template's own EOS text there
    assert found["CT002"][0].message == ("the prompt text matches but the token ids differ at token 10: "
                                         "train [nothing] vs deploy [32000:<|endoftext|>]")  # fmt: skip


@needs_corpus
def test_ct005_and_ct011_a_gguf_of_another_vocabulary():
    found = findings(train=PHI3, deploy=DEPLOY / "qwen3-base.gguf")
    (stop,) = found["CT005"]
    assert stop.message == ("the model was trained to end its turns with <|end|>, but llamacpp stops only on "
                            "<|endoftext|>, </s>, <|im_end|>")  # fmt: skip
    (vocab,) = found["CT011"]
    assert vocab.message == (
        "13 special tokens differ between the train tokenizer and the deploy vocabulary: <s> is 1 in training but "
        "128245 at deploy; <unk> is 0 in training but 128244 at deploy; <|assistant|> (32001) is missing from the "
        "deploy vocabulary; <|endoftext|> is 32000 in training but 151643 at deploy; and 9 more"
    )


@needs_corpus
def test_ct005_is_quiet_when_llamacpp_stops_on_the_end_of_turn_by_its_text():
    """Phi-3's GGUF declares eos <|endoftext|>; llama.cpp also stops on <|end|> because of its text."""
    assert "CT005" not in findings(train=PHI3, deploy=PHI3_DEPLOY / "phi-3-mini-instruct.gguf")


@needs_corpus
def test_ct005_vllm_stops_on_the_tokenizer_eos_only_without_generation_config():
    (stop,) = findings(train=PHI3, deploy=PHI3)["CT005"]
    assert stop.message == "the model was trained to end its turns with <|end|>, but vllm stops only on <|endoftext|>"
    assert stop.hint == "add <|end|>'s id to eos_token_id in generation_config.json"


@needs_corpus
def test_ct010_the_training_template_fails_under_tgi():
    pytest.importorskip("minijinja")
    coder = TEMPLATES / "Qwen3-Coder.jinja"
    found = findings(train=coder, train_tokenizer=QWEN3, deploy=coder, deploy_engine="tgi")
    (unsupported,) = found["CT010"]
    assert "tgi fails on the training template for 5 probes" in unsupported.message
    assert "cannot calculate length of value of type none" in unsupported.message
    assert "CT013" not in found


@needs_corpus
def test_ct012_dates_on_both_sides_are_explained_on_one_side_are_a_difference():
    llama32 = TEMPLATES / "meta-llama-Llama-3.2-3B-Instruct.jinja"
    both = findings(train=llama32, train_tokenizer=QWEN25, deploy=llama32, deploy_engine="llamacpp")
    assert set(both) == {"CT012"} and [f.location.side for f in both["CT012"]] == ["train", "deploy"]
    assert all(f.severity.value == "info" for f in both["CT012"])
    llama31 = TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja"
    one = findings(train=llama31, train_tokenizer=QWEN25, deploy=llama31, deploy_engine="llamacpp")
    assert [f.location.side for f in one["CT012"]] == ["deploy"]
    assert all(f.message.startswith("1 difference (date)") for f in one["CT001"])
    assert "⟨26·Jul·2024⟩" in one["CT001"][0].message and "⟨15·Jan·2025⟩" in one["CT001"][0].message


@needs_corpus
def test_ct013_a_deploy_template_that_rejects_system_messages():
    found = findings(train=QWEN25, deploy=TEMPLATES / "google-gemma-2-2b-it.jinja")
    (fails,) = found["CT013"]
    assert fails.location.probe == "system+user"
    assert fails.message.endswith("(system+user, tool-call): TemplateError: System role not supported")
    assert "CT010" not in found
    (prompt,) = found["CT007"]
    assert prompt.message.startswith('deploy ends the prompt with "<start_of_turn>model↵"')


@needs_corpus
def test_select_and_ignore_take_ct_codes_and_names():
    report = build_report(CheckTemplateOptions(train=str(PHI3), deploy=str(PHI3_DEPLOY / "phi-3-no-template.gguf"),
                                               ignore=("template-fallback",)))  # fmt: skip
    assert {f.code for f in report.findings} == {"CT004"}  # CT001 stays quiet: the fallback explains the text


NEMO_MODELFILE = FIXTURES / "modelfiles" / "mistral-nemo-inst-space.Modelfile"


def test_the_space_after_inst_in_an_ollama_template_is_whitespace_not_bos_eos(tmp_path):
    """`<s>[INST]` vs `[INST] `: Ollama adds the BOS as an id, the real difference is the space after [INST]
    (was classed bos-eos, and CT002 said "the prompt text matches but the token ids differ")."""
    report = build_report(CheckTemplateOptions(train=str(NEMO), deploy=str(NEMO_MODELFILE)))
    user = next(p for p in report.details["probes"] if p["name"] == "user")
    assert [(h["class"], h["train"], h["deploy"]) for h in user["hunks"]][0] == ("whitespace", "<s>[INST]", "[INST] ")
    # the same template without the space before [/INST]: the only text difference is at the start
    modelfile = tmp_path / "Modelfile"
    modelfile.write_text('FROM mistral-nemo\nTEMPLATE """[INST] {{ .Prompt }}[/INST]{{ .Response }}"""\n', encoding="utf-8")
    found = findings(train=NEMO, deploy=modelfile)
    assert "CT002" not in found
    assert any("only whitespace differs" in f.message for f in found["CT008"])
    assert "bos-eos" in next(f.message for f in found["CT001"] if f.location.probe == "multi-turn")  # </s> dropped


def test_the_tool_call_probe_is_compared_for_mistral_templates():
    """Its id is 9 alphanumeric characters, which Mistral's templates demand (the probe was skipped with
    "Tool call IDs should be alphanumeric strings with length 9")."""
    report = build_report(CheckTemplateOptions(train=str(NEMO), deploy=str(NEMO_MODELFILE)))
    probe = next(p for p in report.details["probes"] if p["name"] == "tool-call")
    assert not probe.get("skipped"), probe.get("skipped")
    assert any(f.location.probe == "tool-call" for f in report.findings if f.code == "CT001")
