"""Modelfile parsing; the inline cases and their expected values come from ollama/ollama parser/parser_test.go."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.modelfile import ModelfileMessage, parse_modelfile, read_modelfile

HERE = Path("/models/demo/Modelfile")  # parse_modelfile never touches this folder for model names


def parse(text: str):  # type: ignore[no-untyped-def]
    return parse_modelfile(text, HERE)


LLAMA3_TEMPLATE = (
    "{{ if .System }}<|start_header_id|>system<|end_header_id|>\n\n{{ .System }}<|eot_id|>{{ end }}"
    "{{ if .Prompt }}<|start_header_id|>user<|end_header_id|>\n\n{{ .Prompt }}<|eot_id|>{{ end }}"
    "<|start_header_id|>assistant<|end_header_id|>\n\n{{ .Response }}<|eot_id|>"
)


def test_commands_parameters_and_a_triple_quoted_template() -> None:  # TestParseFileFile
    modelfile = parse(
        f"\nFROM model1\nLICENSE MIT\nPARAMETER param1 value1\nPARAMETER param2 value2\n"
        f'TEMPLATE """{LLAMA3_TEMPLATE}"""    \n'
    )
    assert modelfile.from_ == "model1" and modelfile.model_name == "model1" and modelfile.from_path is None
    assert modelfile.licenses == ("MIT",)
    assert modelfile.parameters == (("param1", "value1"), ("param2", "value2"))
    assert modelfile.template == LLAMA3_TEMPLATE


def test_spaces_are_trimmed_outside_quotes_only() -> None:  # TestParseFileTrimSpace
    modelfile = parse(
        '\nFROM "     model 1"\nLICENSE "MIT       "\nPARAMETER param1        value1\n'
        'TEMPLATE """   {{ .Prompt }}   """    \n'
    )
    assert modelfile.from_ == "     model 1"
    assert modelfile.licenses == ("MIT       ",)
    assert modelfile.parameters == (("param1", "value1"),)
    assert modelfile.template == "   {{ .Prompt }}   "


@pytest.mark.parametrize(
    ("text", "from_"),
    [
        ('FROM "FOO  BAR  "', "FOO  BAR  "),
        ("FROM     FOOO BAR    ", "FOOO BAR"),
        ("FROM llama3:latest", "llama3:latest"),
        ("FROM llama3:7b-instruct-q4_K_M", "llama3:7b-instruct-q4_K_M"),
        ("PARAMETER what the \nFROM lemons make lemonade ", "lemons make lemonade"),
        ("from hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"),
    ],
)
def test_from_names_a_model(text: str, from_: str) -> None:  # TestParseFileFrom
    assert parse(text).model_name == from_


@pytest.mark.parametrize(
    ("text", "system"),
    [  # TestParseFileQuoted
        ('\nFROM foo\nSYSTEM """\nThis is a\nmultiline system.\n"""\n\t\t\t', "\nThis is a\nmultiline system.\n"),
        ('\nFROM foo\nSYSTEM """\nThis is a\nmultiline system."""\n', "\nThis is a\nmultiline system."),
        ('\nFROM foo\nSYSTEM """This is a multiline system."""\n', "This is a multiline system."),
        ('\nFROM foo\nSYSTEM """\nA system with "quotes".\n"""\n', '\nA system with "quotes".\n'),
        ('\nFROM foo\nSYSTEM """"""\n', ""),
        ('\nFROM foo\nSYSTEM ""\n', ""),
        ('\nFROM foo\nSYSTEM "\'"\n', "'"),
        ('\nFROM foo\nSYSTEM """\'\'"\'""\'""\'"\'\'\'\'\'""\'""\'"""\n', "''\"'\"\"'\"\"'\"'''''\"\"'\"\"'"),
        ("FROM foo\nsystem   plain text, trimmed   \n", "plain text, trimmed"),
    ],
)
def test_quoted_and_plain_values(text: str, system: str) -> None:
    assert parse(text).system == system


@pytest.mark.parametrize(
    ("value", "stop"),
    [  # TestParseFileParameters
        ("### User:", "### User:"),
        ("### User: ", "### User:"),
        ('"### User:"', "### User:"),
        ('"### User: "', "### User: "),
        ('"""### User:"""', "### User:"),
        ('"""### User:\n"""', "### User:\n"),
        ("<|eot_id|>", "<|eot_id|>"),
    ],
)
def test_stop_parameter_values(value: str, stop: str) -> None:
    assert parse(f"FROM foo\nPARAMETER stop {value}\n").stop == (stop,)


def test_repeated_stop_parameters_accumulate_in_order() -> None:
    modelfile = parse('FROM foo\nPARAMETER stop "<|im_start|>"\nPARAMETER temperature 0.2\nPARAMETER stop <|im_end|>\n')
    assert modelfile.stop == ("<|im_start|>", "<|im_end|>")
    assert modelfile.parameter("temperature") == ("0.2",)


def test_messages_commands_and_comments() -> None:  # TestParseFileMessages, TestParseFileComments
    modelfile = parse(
        "\n# comment\nFROM foo\nMESSAGE system You are a file parser. Always parse things.\nMESSAGE user Hey there!\n"
        'MESSAGE assistant """\nHello, I want to parse all the things!\n"""\nRENDERER qwen3-coder\nPARSER qwen3-coder\n'
    )
    assert modelfile.messages == (
        ModelfileMessage("system", "You are a file parser. Always parse things."),
        ModelfileMessage("user", "Hey there!"),
        ModelfileMessage("assistant", "\nHello, I want to parse all the things!\n"),
    )
    assert (modelfile.renderer, modelfile.parser) == ("qwen3-coder", "qwen3-coder")


def test_commands_are_case_insensitive_and_the_last_one_wins() -> None:
    modelfile = parse("from foo\nTemplate first\ntemplate {{ .Prompt }}\nSystem hi\r\n")
    assert modelfile.template == "{{ .Prompt }}" and modelfile.system == "hi"


def test_non_printable_characters_are_dropped_except_whitespace() -> None:
    assert parse("FROM foo\nSYSTEM a\x00b\u200bc\td\n").system == "abc\td"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Modelfile: no FROM line"),
        ("PARAMETER param1 value1", "Modelfile: no FROM line"),
        ("\nFROM foo\nBADCOMMAND param1 value1\n", "Modelfile:3: unknown command 'BADCOMMAND'"),
        ("\nFROM foo\nPARAMETER param1\n", "Modelfile:3: PARAMETER needs a name and a value"),
        ("\nFROM foo\nMESSAGE badguy I'm a bad guy!\n", "Modelfile:3: MESSAGE role must be one of"),
        ("\nFROM foo\nMESSAGE system\n", "Modelfile:3: MESSAGE needs a role and a value"),
        ('\nFROM foo\nSYSTEM """This is a multiline system.""\n\t\t\t', "Modelfile:3: unterminated quoted value"),
        ('FROM foo\nSYSTEM "\n\n\n', "Modelfile:2: unterminated quoted value"),
        ("FROM foo\nSYSTEM\n", "Modelfile:2: SYSTEM needs a value"),
        ("FROM foo\nREQUIRES soon\n", "Modelfile:2: REQUIRES must be a version"),
    ],
)
def test_bad_modelfiles_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(text)
    assert message in str(caught.value) and str(HERE.parent) in str(caught.value)


def test_from_and_adapter_resolve_against_the_modelfile_folder(tmp_path: Path) -> None:
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "model.gguf").write_bytes(b"GGUF")
    (tmp_path / "lora.gguf").write_bytes(b"GGUF")
    modelfile_path = tmp_path / "Modelfile"
    modelfile_path.write_text("FROM ./weights/model.gguf\nADAPTER lora.gguf\n", encoding="utf-8")
    modelfile = read_modelfile(modelfile_path)
    assert modelfile.from_path == tmp_path / "weights" / "model.gguf" and modelfile.model_name is None
    assert modelfile.adapter == tmp_path / "lora.gguf"


@pytest.mark.parametrize("line", ["FROM ./missing.gguf", "FROM /no/such/model/fp16.bin", "ADAPTER ./lora.gguf"])
def test_missing_local_paths_are_errors_naming_them(tmp_path: Path, line: str) -> None:
    modelfile_path = tmp_path / "Modelfile"
    modelfile_path.write_text(f"FROM llama3\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"Modelfile:2: \w+ .*: no such file or folder"):
        read_modelfile(modelfile_path)


def test_utf16_and_bom_modelfiles(tmp_path: Path) -> None:  # TestParseFileUTF16ParseFile
    text = "FROM bob\nPARAMETER param1 1\nPARAMETER param2 4096\nSYSTEM You are a utf16 file.\n"
    for name, data in [("le", b"\xff\xfe" + text.encode("utf-16-le")), ("bom8", b"\xef\xbb\xbf" + text.encode())]:
        path = tmp_path / name
        path.write_bytes(data)
        modelfile = read_modelfile(path)
        assert (modelfile.model_name, modelfile.system) == ("bob", "You are a utf16 file.")
        assert modelfile.parameters == (("param1", "1"), ("param2", "4096"))


def test_unreadable_modelfile_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read Modelfile"):
        read_modelfile(tmp_path / "absent")
