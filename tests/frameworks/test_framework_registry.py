"""The framework registry: every table of frameworks is generated from frameworks/registry.py and the FRAMEWORK
objects, and equals what the tree held before the registry."""

from __future__ import annotations

import pytest

from mldebug_cli.core.errors import UsageError
from mldebug_cli.frameworks import registry, selector, versions


def test_each_line_names_a_module_whose_framework_carries_its_name():
    for entry in registry.REGISTRY:
        assert registry.framework(entry.name).name == entry.name


def test_the_generated_tables_are_the_ones_the_tree_held():
    assert registry.VERSION_PACKAGES == ("transformers", "trl", "axolotl", "llamafactory")
    assert registry.names_with("read_spec") == ("transformers", "trl", "axolotl", "llama-factory", "torchtune")
    assert registry.names_with("row_profile") == ("transformers", "trl", "axolotl", "llama-factory", "unsloth")
    assert registry.names_with("read_plan") == ("transformers", "trl", "axolotl", "llama-factory", "unsloth")
    assert registry.names_with("encodes_pairs") == ("llama-factory",)
    assert {n: selector.versioned_packages(n) for n in registry.NAMES} == {
        "transformers": ("transformers",), "trl": ("trl", "transformers"), "axolotl": ("axolotl", "transformers"),
        "llama-factory": ("llamafactory", "transformers"), "torchtune": (), "unsloth": ()}
    assert versions.TargetVersions().get("llama-factory").package == "llamafactory"


def test_an_unknown_framework_names_the_ones_mldebug_reads():
    with pytest.raises(UsageError, match="unknown framework 'megatron'") as raised:
        selector.checked_framework("megatron")
    assert raised.value.hint == "choose one of transformers, trl, axolotl, llama-factory, torchtune"


def test_each_line_serves_exactly_what_its_framework_has():
    """The command line reads ``serves`` without importing a framework module: it must say what the object has."""
    for entry in registry.REGISTRY:
        has = {name for name, capability in registry.CAPABILITIES.items()
               if getattr(registry.framework(entry.name), capability.part)}
        assert set(entry.serves) == has, entry.name


def test_each_command_takes_the_frameworks_that_serve_what_it_needs():
    assert registry.names_for("rows") == ("transformers", "trl", "axolotl", "llama-factory", "unsloth")
    assert registry.names_for(*registry.PREFLIGHT_NEEDS) == ("transformers", "trl", "axolotl", "llama-factory")
    assert registry.names_for("schedule") == ("transformers", "trl", "axolotl", "llama-factory", "torchtune")
    assert registry.names_for("trainer") == ("transformers", "trl", "axolotl", "llama-factory")


def test_a_framework_without_the_part_a_command_needs_is_refused_by_name():
    with pytest.raises(UsageError, match="--framework torchtune: mldebug does not read its trainer settings") as raised:
        registry.chosen("torchtune", "trainer")
    assert raised.value.hint == "choose one of transformers, trl, axolotl, llama-factory"
    with pytest.raises(UsageError, match="--framework unsloth: mldebug does not read its schedule"):
        registry.chosen(*("unsloth", *registry.PREFLIGHT_NEEDS))
    assert registry.chosen("axolotl", "rows") == "axolotl"


def test_a_line_with_flags_names_a_framework_that_reads_them():
    """A framework's own flags are declared on its line (for --help) and read by its FRAMEWORK.read_flags."""
    for entry in registry.REGISTRY:
        assert bool(entry.flags) == bool(registry.framework(entry.name).read_flags), entry.name
        assert not entry.flags or "rows" in entry.serves, entry.name  # inspect-data's, so the framework reads rows
    assert {option: e.name for option, e in registry.FLAGS.items()} == {
        "--instruction-part": "unsloth", "--response-part": "unsloth", "--unsloth-template": "unsloth"}


def test_inspect_data_offers_each_framework_flag(tmp_path):
    """The flags are generated from the registry lines, in inspect-data's help and its parameters."""
    import inspect

    from mldebug_cli.cli.inspect_data import inspect_data

    parameters = inspect.signature(inspect_data).parameters
    for option, entry in registry.FLAGS.items():
        flag = next(f for f in entry.flags if f.option == option)
        assert parameters[flag.parameter].default.param_decls == (option,)
        assert parameters[flag.parameter].default.help == flag.help
