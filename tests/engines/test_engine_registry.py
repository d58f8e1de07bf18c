"""The engine registry: the tables sources/deploy.py used to hold are generated from the engines' own objects."""

from __future__ import annotations

import pytest

from mldebug_cli.core.errors import UsageError
from mldebug_cli.engines.registry import REGISTRY, choose_engine, engine, engines_for


def test_each_line_names_a_module_whose_engine_carries_the_name_and_the_roles_the_line_gives():
    for entry in REGISTRY:
        found = engine(entry.name)
        assert found.name == entry.name
        assert (found.render_side is not None) == bool(entry.renders)


def test_the_default_engine_of_each_kind_is_the_one_it_was_before_the_registry():
    assert engines_for("tokenizer")[:4] == ("vllm", "transformers", "tgi", "llamacpp")
    assert engines_for("jinja")[:4] == ("vllm", "transformers", "tgi", "llamacpp")
    assert engines_for("gguf") == ("llamacpp", "ollama")
    assert engines_for("modelfile") == ("ollama",)
    assert engines_for("tokenizer", "renders")[:3] == ("transformers", "llamacpp", "tgi")
    assert engines_for("gotemplate", "renders") == ("ollama",)
    assert engines_for("gguf", "renders") == ("llamacpp", "ollama", "transformers", "tgi")


def test_an_engine_that_cannot_serve_a_kind_is_refused_with_the_ones_that_can():
    with pytest.raises(UsageError, match="--deploy-engine tgi cannot serve a gguf") as raised:
        choose_engine("gguf", "tgi", "--deploy-engine")
    assert raised.value.hint == "for a gguf: llamacpp, ollama"
    with pytest.raises(UsageError, match="unknown engine 'sglang'"):
        choose_engine("tokenizer", "sglang", "--deploy-engine")


def test_the_engine_flags_help_names_each_kinds_default_from_the_registry():
    from mldebug_cli.cli.common import engine_choices

    assert engine_choices("serves") == ("transformers, vllm, llamacpp, ollama, tgi or vllm-completions (default: vllm for "
                                        "a tokenizer folder or a .jinja, llamacpp for a GGUF, ollama for a Modelfile).")
    assert engine_choices("renders") == ("transformers, llamacpp, ollama, tgi or vllm-completions (default: transformers "
                                         "for a tokenizer folder or a .jinja, llamacpp for a GGUF, ollama for a Modelfile "
                                         "or a Go template).")
