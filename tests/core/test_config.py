"""Tool configuration: discovery, strict validation, layering (file < environment), per-check severities."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldebug_cli.core import config
from mldebug_cli.core.config import ConfigError, Settings
from mldebug_cli.core.findings import Finding, Location, Report, Severity
from mldebug_cli.frameworks.registry import VERSION_PACKAGES


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file(tmp_path):
    assert config.load(tmp_path, env={}, version_packages=VERSION_PACKAGES) == Settings()


def test_mldebug_toml_is_found_from_a_subfolder(tmp_path):
    write(tmp_path / "mldebug.toml", 'select = ["DS0"]\nignore = ["no-generation-markers"]\nfail-on = "warning"\n')
    (tmp_path / "data" / "sub").mkdir(parents=True)
    settings = config.load(tmp_path / "data" / "sub", env={}, version_packages=VERSION_PACKAGES)
    assert settings.select == ("DS0",) and settings.ignore == ("no-generation-markers",)
    assert settings.fail_on is Severity.WARNING


def test_pyproject_needs_a_tool_mldebug_table_and_the_nearest_file_wins(tmp_path):
    write(tmp_path / "mldebug.toml", 'fail-on = "info"\n')
    write(tmp_path / "project" / "pyproject.toml", '[project]\nname = "x"\n')
    assert config.find_file(tmp_path / "project") == tmp_path / "mldebug.toml"  # no [tool.mldebug]: keep looking
    write(tmp_path / "project" / "pyproject.toml", '[project]\nname = "x"\n\n[tool.mldebug]\nfail-on = "warning"\n')
    assert config.load(tmp_path / "project", env={}, version_packages=VERSION_PACKAGES).fail_on is Severity.WARNING


def test_mldebug_toml_wins_over_pyproject_in_the_same_folder(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.mldebug]\nfail-on = "warning"\n')
    write(tmp_path / "mldebug.toml", 'fail-on = "info"\n')
    assert config.load(tmp_path, env={}, version_packages=VERSION_PACKAGES).fail_on is Severity.INFO


@pytest.mark.parametrize("text, message", [
    ('selct = ["DS001"]\n', "unknown key 'selct' (did you mean 'select'?)"),
    ('fail_on = "error"\n', "unknown key 'fail_on' (did you mean 'fail-on'?)"),
    ('[tool.mldebug]\nselect = []\n', "unknown key 'tool'"),
    ('fail-on = "fatal"\n', "fail-on: expected one of info, warning, error, got 'fatal'"),
    ('select = "DS001"\n', "select: expected a list of check codes, prefixes or names, got 'DS001'"),
    ('ignore = ["DS999"]\n', "ignore: 'DS999' matches no check code, prefix or name"),
    ('[checks.DS999]\nseverity = "error"\n', "checks.DS999: unknown check 'DS999'"),
    ('[checks.DS007]\nseverty = "error"\n', "checks.DS007: unknown key 'severty' (did you mean 'severity'?)"),
    ('[checks.DS007]\nseverity = "fatal"\n', "checks.DS007.severity: expected one of info, warning, error"),
    ('[checks]\nDS007 = "error"\n', "checks.DS007: expected a table of options, got 'error'"),
    ('[checks.DS007]\nseverity = "error"\n[checks.response-truncated]\nseverity = "info"\n',
     "checks.response-truncated: DS007 is configured twice"),
    ('select = [\n', "not valid TOML"),
])
def test_invalid_configuration_names_the_file_and_the_key(tmp_path, text, message):
    path = write(tmp_path / "mldebug.toml", text)
    with pytest.raises(ConfigError) as raised:
        config.load(tmp_path, env={}, version_packages=VERSION_PACKAGES)
    assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value)


def test_unknown_key_in_pyproject_names_the_table(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.mldebug]\nexclude = ["x"]\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml: \[tool.mldebug\]: unknown key 'exclude'"):
        config.load(tmp_path, env={}, version_packages=VERSION_PACKAGES)


def test_the_environment_replaces_the_file(tmp_path):
    write(tmp_path / "mldebug.toml", 'select = ["DS0"]\nignore = ["DS015"]\nfail-on = "info"\n')
    env = {"MLDEBUG_SELECT": "DS001, double-bos", "MLDEBUG_IGNORE": "", "MLDEBUG_FAIL_ON": "warning"}
    settings = config.load(tmp_path, env=env, version_packages=VERSION_PACKAGES)
    assert settings.select == ("DS001", "double-bos") and settings.ignore == () and settings.fail_on is Severity.WARNING


def test_environment_values_are_validated_by_name(tmp_path):
    with pytest.raises(ConfigError, match="MLDEBUG_FAIL_ON: expected one of"):
        config.load(tmp_path, env={"MLDEBUG_FAIL_ON": "loud"}, version_packages=VERSION_PACKAGES)
    with pytest.raises(ConfigError, match="MLDEBUG_SELECT: 'nope' matches no check"):
        config.load(tmp_path, env={"MLDEBUG_SELECT": "nope"}, version_packages=VERSION_PACKAGES)


def test_mldebug_config_names_the_file(tmp_path):
    explicit = write(tmp_path / "ci" / "strict.toml", 'fail-on = "info"\n')
    write(tmp_path / "mldebug.toml", 'fail-on = "warning"\n')
    assert config.load(tmp_path, env={"MLDEBUG_CONFIG": str(explicit)}, version_packages=VERSION_PACKAGES).fail_on is Severity.INFO
    with pytest.raises(ConfigError, match="MLDEBUG_CONFIG=.*: no such file"):
        config.load(tmp_path, env={"MLDEBUG_CONFIG": str(tmp_path / "missing.toml")}, version_packages=VERSION_PACKAGES)


def test_per_check_severity_by_code_or_name_is_applied_to_reports(tmp_path):
    write(tmp_path / "mldebug.toml", '[checks.unmapped-role]\nseverity = "warning"\n\n[checks.DS023]\nseverity = "error"\n')
    settings = config.load(tmp_path, env={}, version_packages=VERSION_PACKAGES)
    assert settings.severities == {"DS011": Severity.WARNING, "DS023": Severity.ERROR}
    findings = (
        Finding("DS011", "unmapped-role", Severity.ERROR, "m", None, Location(row=0)),
        Finding("DS023", "eos-mismatch", Severity.WARNING, "m", None, Location()),
        Finding("DS001", "no-trainable-tokens", Severity.ERROR, "m", None, Location(row=1)),
    )
    report = settings.apply(Report(command="inspect-data", findings=findings))
    assert [f.severity for f in report.findings] == [Severity.WARNING, Severity.ERROR, Severity.ERROR]
    assert Settings().apply(report) is report
