"""The neurondev command: output, files written, exit statuses, messages.

Most cases run in-process through ``cli.main(argv)`` (milliseconds instead of a new Python with
torch each); a few go through the installed command itself, for the entry point and exit codes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neurondev import cli
from neurondev.cli.specs import InputSpecError, parse_input

COMMAND = Path(sys.executable).with_name("neurondev")

USER_CODE = """
import torch

def frozen(x):
    out = torch.empty(x.shape[0], device=x.device)
    out.copy_(x * 2)
    return out

def falls_back(x):
    out = torch.zeros(4, device=x.device)
    return torch.histc(x, bins=4) + out

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) + torch.zeros(8, device=x.device)

class NeedsArgs(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli")
    (path / "usercode.py").write_text(USER_CODE)
    return path


def command(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The installed ``neurondev`` command in a new process."""
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | env
    return subprocess.run([str(COMMAND), *args], cwd=folder, capture_output=True, text=True, timeout=600, env=environ)


@pytest.fixture
def neurondev(capsys, monkeypatch):
    """``neurondev(folder, *args)``: ``cli.main(args)`` in this process, from ``folder``; its exit
    status, stdout and stderr as a CompletedProcess."""

    def run(folder: Path, *args: str) -> subprocess.CompletedProcess:
        monkeypatch.chdir(folder)
        capsys.readouterr()
        code = cli.main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["neurondev", *args], code, out, err)

    return run


def test_the_command_is_installed_and_python_dash_m_is_the_same(folder):
    assert COMMAND.is_file()
    result = subprocess.run([sys.executable, "-m", "neurondev", "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "demo" in result.stdout and "doctor" in result.stdout
    usage = subprocess.run([str(COMMAND), "explain"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "give either MODULE:FUNC" in usage.stderr and "Traceback" not in usage.stderr


@pytest.mark.dot
@pytest.mark.xla
def test_demo_prints_the_summary_and_writes_the_report(folder, neurondev):
    result = neurondev(folder, "demo")
    assert result.returncode == 0, result.stderr
    assert "1 frozen device pin(s) (torch.empty at patterns.py:" in result.stdout
    assert "After DeviceRewriterPass: 0 breaks" in result.stdout
    page = (folder / "neurondev-report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page


@pytest.mark.dot
@pytest.mark.xla
def test_explain_a_function_in_a_file_writes_html_and_json_and_exits_0(folder, neurondev):
    result = neurondev(folder, "explain", "usercode.py:frozen", "--input", "randn(16)", "--html", "r.html", "--json", "r.json")
    assert result.returncode == 0, result.stderr
    assert "1 frozen device pin(s) (torch.empty at usercode.py:5) -> 1 graph break(s) on xla:0" in result.stdout
    data = json.loads((folder / "r.json").read_text())
    assert data["graphs"][0]["pins"][0]["line"] == 5 and data["rewrite_preserves_values"] is True
    assert "<svg" in (folder / "r.html").read_text()


@pytest.mark.xla
def test_explain_a_module_class_in_an_importable_module(folder, neurondev):
    result = neurondev(folder, "explain", "usercode:Net", "--input", "randn(4, 8)")
    assert result.returncode == 0, result.stderr
    assert "torch.zeros at usercode.py:" in result.stdout


@pytest.mark.xla
def test_breaks_left_after_the_pass_exit_1(folder, neurondev):
    result = neurondev(folder, "explain", "usercode.py:falls_back", "--input", "randn(16)")
    assert result.returncode == 1, result.stderr
    assert "After DeviceRewriterPass: 1 breaks" in result.stdout


@pytest.mark.xla
def test_a_gallery_example_and_no_run(folder, neurondev):
    result = neurondev(folder, "explain", "--example", "causal-mask")
    assert result.returncode == 0 and "fails on xla:0 at masked_fill" in result.stdout, result.stderr
    result = neurondev(folder, "explain", "usercode.py:frozen", "--input", "randn(16)", "--no-run")
    assert result.returncode == 0 and "not run" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["explain", "usercode.py:frozen"], "takes inputs (x): give one --input SPEC per argument"),
        (["explain", "usercode.py:frozen", "--input", "__import__('os').system('true')"], "must be one call such as randn(64)"),
        (["explain", "usercode.py:frozen", "--input", "randn(-3)"], "a shape is one or more whole numbers"),
        (["explain", "usercode.py:missing", "--input", "randn(3)"], "has no 'missing'; it has: NeedsArgs, Net"),
        (["explain", "nowhere.py:f", "--input", "randn(3)"], "no file nowhere.py"),
        (["explain", "no_such_module:f", "--input", "randn(3)"], "cannot import no_such_module"),
        (["explain", "usercode.py:NeedsArgs", "--input", "randn(3)"], "cannot be built with no arguments"),
        (["explain", "usercode.py:frozen", "--input", "randn(3, 3)", "--input", "randn(2)"], "tracing frozen on CPU raised TypeError"),
        (["explain"], "give either MODULE:FUNC"),
        (["explain", "--example", "nope"], "no example 'nope'; known: seed"),
        (["explain", "usercode.py:frozen", "--input", "randn(3)", "--target", "trainium"], "not a device torch knows"),
    ],
    ids=[
        "no-inputs",
        "code-in-spec",
        "negative-shape",
        "missing-name",
        "missing-file",
        "missing-module",
        "class-needs-args",
        "wrong-arity",
        "nothing",
        "unknown-example",
        "bad-target",
    ],
)
def test_usage_import_and_trace_errors_exit_2_with_one_line_and_no_traceback(folder, args, message, neurondev):
    result = neurondev(folder, *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert "--debug for the traceback" in result.stderr


@pytest.mark.xla
def test_the_installed_command_exits_1_with_breaks(folder):
    breaks = command(folder, "explain", "usercode.py:falls_back", "--input", "randn(16)")
    assert breaks.returncode == 1 and "After DeviceRewriterPass: 1 breaks" in breaks.stdout, breaks.stderr


def test_debug_shows_the_traceback(folder, neurondev):
    result = neurondev(folder, "explain", "usercode.py:frozen", "--input", "randn(3, 3)", "--input", "randn(2)", "--debug")
    assert result.returncode == 2 and "Traceback" in result.stderr


def test_examples_lists_the_gallery(folder, neurondev):
    result = neurondev(folder, "examples")
    assert result.returncode == 0
    for name in ("seed", "causal-mask", "like-and-new", "no-device-upload"):
        assert name in result.stdout


@pytest.mark.xla
def test_doctor_says_what_is_here_and_exits_0_when_nothing_needed_is_missing(folder, neurondev):
    result = neurondev(folder, "doctor")
    assert result.returncode == 0, result.stdout
    assert "torch 2.9.0 + torch-xla 2.9.0: the pair neurondev is tested with" in result.stdout
    assert "xla:0 (pjrt" in result.stdout and "dot (Graphviz)" in result.stdout and "draws SVG" in result.stdout
    assert "torch-neuronx" in result.stdout and "everything neurondev needs is here" in result.stdout
    assert "libcst 1.9.0: fixed lines are written keeping comments and formatting" in result.stdout


def test_doctor_exits_1_with_the_fix_when_dot_is_missing(folder, neurondev, monkeypatch):
    monkeypatch.setenv("NEURONDEV_DOT", "/nonexistent/dot")
    result = neurondev(folder, "doctor")
    assert result.returncode == 1
    assert "MISSING dot (Graphviz)" in result.stdout and "pip install graphviz-pure" in result.stdout


@pytest.mark.parametrize(
    "spec, shape, dtype",
    [
        ("randn(64)", (64,), "torch.float32"),
        ("rand(2, 3)", (2, 3), "torch.float32"),
        ("zeros((4, 4), dtype=float16)", (4, 4), "torch.float16"),
        ("ones(3)", (3,), "torch.float32"),
        ("arange(10)", (10,), "torch.int64"),
        ("randint(0, 1000, (1, 16))", (1, 16), "torch.int64"),
        ("full((2, 2), 0.5)", (2, 2), "torch.float32"),
    ],
)
def test_the_input_language(spec, shape, dtype):
    tensor = parse_input(spec)
    assert tuple(tensor.shape) == shape and str(tensor.dtype) == dtype
    assert parse_input(spec).equal(tensor)  # a fixed seed: the same input every time


@pytest.mark.parametrize("spec", ["x", "randn(x)", "randn(2)(3)", "exec('1')", "randn(2, dtype=object)", "randn(2); 1", "randint(1, 2)"])
def test_the_input_language_refuses_everything_else(spec):
    with pytest.raises(InputSpecError):
        parse_input(spec)


def test_a_class_that_is_no_module_is_a_usage_error(folder, neurondev):
    (folder / "plain.py").write_text("class Config:\n    pass\n")
    result = neurondev(folder, "explain", "plain.py:Config", "--input", "randn(3)")
    assert result.returncode == 2 and "is a class but not an nn.Module" in result.stderr


def test_check_json_answers_an_error_as_json_too(folder, neurondev):
    result = neurondev(folder, "check", "usercode.py:missing", "--input", "randn(3)", "--json")
    assert result.returncode == 2 and json.loads(result.stdout) == {
        "clean": None,
        "error": result.stderr.splitlines()[0][len("neurondev: error: ") :],
    }


def test_a_report_path_that_cannot_be_written_is_refused_before_anything_runs(folder, neurondev):
    result = neurondev(folder, "explain", "usercode.py:frozen", "--input", "randn(16)", "--html", "no/such/folder/r.html")
    assert result.returncode == 2 and "the folder" in result.stderr and "does not exist" in result.stderr
    assert result.stdout == ""  # nothing ran


def test_version_and_the_input_language_in_check_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out.startswith("neurondev 0.")
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    assert "randint(low, high, shape)" in capsys.readouterr().out and "float64" in parse_help()


def parse_help() -> str:
    from neurondev.cli.specs import SPEC_HELP

    return SPEC_HELP


@pytest.mark.xla
def test_a_module_class_on_meta_and_the_model_explorer_files(folder, neurondev):
    pytest.importorskip("model_explorer", reason="the setup installs neurondev[explorer] for the tests")
    result = neurondev(folder, "explain", "usercode:Net", "--meta", "--input", "randn(4, 8)", "--model-explorer", "me")
    assert result.returncode == 0, result.stderr
    assert "traced on the meta device" in result.stdout and "torch.zeros at usercode.py:" in result.stdout
    assert (folder / "me" / "graphs.json").is_file() and (folder / "me" / "overlay-pins.json").is_file()
    assert "model explorer: " in result.stdout and "--node_data_paths=" in result.stdout
    assert "then, on the findings: http://127.0.0.1:8080/?data=" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("explain", "f.py:f", "--input", "randn(4,"),
        ("explain", "no_such_file.py:f", "--input", "randn(4)"),
        ("check", "no_such_file.py:f"),
        ("fix", "no_such_file.py:f", "--input", "randn(4)"),
        ("watch", "no_such_script.py"),
    ],
    ids=["spec-cut-short", "explain-no-file", "check-no-file", "fix-no-file", "watch-no-script"],
)
def test_a_usage_error_is_said_before_torch_is_imported(tmp_path, args):
    """Under a second from the shell (benchmarks/bench_usage.py times it): the command line is checked before
    anything imports torch (its import alone takes seconds), as Python's own import log shows."""
    code = "import runpy, sys; sys.argv = ['neurondev', *sys.argv[1:]]; runpy.run_module('neurondev', run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 2 and "neurondev: error:" in done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "neurondev.cli.command" in imported and "torch" not in imported


def test_check_help_says_allow_takes_places_and_sends_rule_codes_to_ignore(capsys):
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "--allow PLACE" in said and "file.py:LINE, or a glob of them" in said and "rule codes go to --ignore" in said
