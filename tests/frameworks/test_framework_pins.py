"""The transformers a framework runs: its own pin (Requires-Dist of its wheel, in the version facts) decides which
release mldebug assumes when the user names none and the installed one is outside it."""

from __future__ import annotations

import pytest

from mldebug_cli.frameworks import versions


@pytest.mark.parametrize("framework,release,pin", [
    ("llama-factory", "0.9.5", "!=4.52.0,!=4.57.0,<=5.6.0,>=4.55.0"),
    ("llama-factory", "0.9.4", "!=4.52.0,!=4.57.0,<=4.57.1,>=4.51.0"),
    ("trl", "1.16.0", ">=4.56.2"),
    ("axolotl", "0.19.0", "==5.16.1"),
    ("unsloth", "2026.10.9", "!=4.53.0,!=4.54.0,!=4.55.0,!=4.55.1,!=4.57.0,!=4.57.4,!=4.57.5,!=5.0.0,!=5.1.0,"
                             "<=5.17.0,>=4.52.4"),
])
def test_the_pins_read_from_the_wheels(framework, release, pin):
    assert versions.framework_pin(framework, release) == (release, pin)


def test_torchtune_does_not_depend_on_transformers():
    assert versions.framework_pin("torchtune", "0.6.1") is None


@pytest.mark.parametrize("framework,assumed", [("llama-factory", "5.6.0"), ("axolotl", "5.16.1"),
                                                ("unsloth", "5.17.0")])
def test_the_newest_allowed_release_is_assumed_outside_the_pin(monkeypatch, framework, assumed):
    monkeypatch.setattr(versions, "installed", lambda package: "5.24.0" if package == "transformers" else None)
    target = versions.resolve(None, {}, framework=framework).get("transformers")
    assert target.version == assumed and not target.given
    assert target.source.startswith("assumed: the newest") and "installed 5.24.0 is outside it" in target.source


def test_an_allowed_installed_release_or_a_named_one_is_kept(monkeypatch):
    monkeypatch.setattr(versions, "installed", lambda package: "5.24.0" if package == "transformers" else None)
    assert versions.resolve(None, {}, framework="trl").get("transformers").version == "5.24.0"
    named = versions.resolve(None, {"transformers": "5.24.0"}, framework="llama-factory").get("transformers")
    assert named.version == "5.24.0" and named.given
