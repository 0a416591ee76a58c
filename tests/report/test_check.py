"""neurondev.check, the pytest plugin (through pytester: a failing and a passing project) and `neurondev check`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import neurondev
from tests.helpers import line_of

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.xla


def pinned(x):
    out = torch.zeros(x.shape[0], device=x.device)
    out.copy_(x * 2)
    return out


def clean(x):
    return torch.zeros_like(x) + x.new_ones(x.shape)


def branches(x):
    flags = (x > 0).float() if x.device.type == "cpu" else (x > 0).int()
    return x + flags


def test_check_raises_an_assertion_listing_the_pin_its_line_and_the_fix():
    with pytest.raises(neurondev.DevicePinsError) as caught:
        neurondev.check(pinned, torch.randn(4))
    assert isinstance(caught.value, AssertionError)
    text = str(caught.value)
    line = line_of(pinned, "torch.zeros")
    assert f"test_check.py:{line}: out = torch.zeros(x.shape[0], device=x.device)" in text
    assert "write instead: write x.new_zeros(size)" in text
    assert [f.node for f in caught.value.findings] == ["out"]


def test_check_suggest_puts_the_verified_fixed_line_to_paste_under_the_pin():
    with pytest.raises(neurondev.DevicePinsError) as caught:
        neurondev.check(pinned, torch.randn(4), suggest=True)
    assert (
        "      verified fix, paste:\n        out = x.new_zeros(x.shape[0], dtype=torch.get_default_dtype())\n" in str(caught.value) + "\n"
    )
    (finding,) = caught.value.findings  # the pin the fix is for: its rule and line
    assert (finding.rule, finding.source.line) == ("ND101", line_of(pinned, "device=x.device"))
    with pytest.raises(neurondev.DevicePinsError) as caught:
        neurondev.check(pinned, torch.randn(4))
    assert "verified fix" not in str(caught.value) and [f.rule for f in caught.value.findings] == ["ND101"]


def test_check_without_suggest_verifies_no_fix_and_never_loads_libcst():
    code = (
        "import sys, torch, neurondev\n"
        "from tests.report.test_check import pinned\n"
        "try:\n"
        "    neurondev.check(pinned, torch.randn(4))\n"
        "except neurondev.DevicePinsError as e:\n"
        "    print(len(e.findings), 'libcst' in sys.modules)\n"
        "neurondev.check(pinned, torch.randn(4), allow=['out'], suggest=True)\n"
        "print('libcst' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["1", "False", "True"]  # without suggest nothing is fixed; with it, libcst writes the fix


def test_check_finds_device_specialised_lines_too():
    with pytest.raises(neurondev.DevicePinsError, match="traced differently on XLA") as caught:
        neurondev.check(branches, torch.randn(4))
    (finding,) = caught.value.findings
    assert finding.kind == "device-specialised" and finding.line == line_of(branches, "flags =")


@pytest.mark.parametrize("rule", ["out", "test_check.py:{line}", "torch.zeros", "test_check.py:*", "*device=x.device*"])
def test_allowed_findings_pass_and_return_the_explanation(rule):
    rule = rule.format(line=line_of(pinned, "torch.zeros"))
    explanation = neurondev.check(pinned, torch.randn(4), allow=[rule])
    assert isinstance(explanation, neurondev.Explanation) and len(explanation.pins) == 1


def test_a_clean_function_passes():
    assert neurondev.check(clean, torch.randn(4)).pins == ()


USER_CODE = """
import pytest, torch

def pinned(x):
    out = torch.zeros(x.shape[0], device=x.device)
    out.copy_(x * 2)
    return out

def clean(x):
    return x.new_zeros(x.shape) + x

def no_inputs():
    return torch.zeros(4) + 1
"""

PROJECT = (
    USER_CODE
    + """
def test_clean_with_the_fixture(neurondev_check):
    neurondev_check(clean, torch.randn(4))

def test_pinned_with_the_fixture(neurondev_check):
    neurondev_check(pinned, torch.randn(4))

@pytest.mark.neurondev_check(pinned, torch.randn(4))
def test_pinned_with_the_marker():
    pass

@pytest.mark.neurondev_check(clean, torch.randn(4))
def test_clean_with_the_marker():
    pass

@pytest.mark.neurondev_check(allow=["out"])
def test_allowed_by_the_marker(neurondev_check):
    neurondev_check(pinned, torch.randn(4))

@pytest.mark.neurondev_check(fn=no_inputs)
def test_a_function_without_inputs_by_keyword():
    pass

@pytest.mark.neurondev_check(fn=pinned, inputs=(torch.randn(4),), allow=["out"])
def test_inputs_and_allow_by_keyword():
    pass

@pytest.mark.neurondev_check(fn=pinned)
def test_a_missing_input_is_a_test_failure():
    pass
"""
)


def test_the_pytest_plugin_fails_the_pinned_tests_like_pytest_and_passes_the_rest(pytester):
    from tests.test_readme import readme_guard

    pytester.makepyfile(test_project=PROJECT, test_readme_guard=readme_guard())  # the README's example too, as written
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider", "-v")  # the marker is registered
    result.assert_outcomes(passed=6, failed=3)
    result.stdout.fnmatch_lines(["*test_readme_guard.py::test_model_has_no_device_pins PASSED*"])
    output = result.stdout.str()
    assert "needs example inputs for x" in output and "Traceback" not in output
    assert "During handling" not in output and "DEBUG" not in output, output
    assert "test_project.py:4: out = torch.zeros(x.shape[0], device=x.device)" in output, output
    assert "write instead: write x.new_zeros(size)" in output
    assert "site-packages/neurondev" not in output and "neurondev/results/" not in output  # no traceback from inside
    assert (Path(neurondev.__file__).parent / "results" / "check.py").is_file()  # where a traceback would name it


def test_the_check_command_exits_0_clean_1_with_pins_2_on_errors(tmp_path, monkeypatch, capsys):
    from neurondev import cli

    (tmp_path / "code.py").write_text(USER_CODE)
    monkeypatch.chdir(tmp_path)

    def run(*args):
        capsys.readouterr()
        code = cli.main(["check", *args])
        return code, capsys.readouterr().out

    assert run("code.py:clean", "--input", "randn(4)")[0] == 0
    code, out = run("code.py:pinned", "--input", "randn(4)")
    assert code == 1 and "code.py:5: out = torch.zeros" in out
    code, out = run("code.py:pinned", "--input", "randn(4)", "--json")
    data = json.loads(out)
    assert code == 1 and data["clean"] is False and data["findings"][0]["where"] == "code.py:5"
    assert run("code.py:pinned", "--input", "randn(4)", "--allow", "code.py:5")[0] == 0
    code, out = run("code.py:pinned", "--input", "randn(4)", "--suggest")
    assert code == 1 and "verified fix, paste:\n        out = x.new_zeros(x.shape[0], dtype=torch.get_default_dtype())" in out
    assert run("code.py:nothing", "--input", "randn(4)")[0] == 2


@pytest.mark.dot
def test_check_draws_nothing_while_a_card_does(tmp_path, monkeypatch):
    import shutil

    calls = tmp_path / "calls"
    recorder = tmp_path / "dot"
    real = shutil.which("dot") or str(Path(sys.executable).with_name("graphviz-pure"))
    recorder.write_text(f'#!/bin/sh\necho called >> "{calls}"\nexec "{real}" "$@"\n')
    recorder.chmod(0o755)
    monkeypatch.setenv("NEURONDEV_DOT", str(recorder))
    with pytest.raises(neurondev.DevicePinsError):
        neurondev.check(pinned, torch.randn(4))
    neurondev.check(clean, torch.randn(4))
    assert not calls.exists()
    card = neurondev.explain(pinned, torch.randn(4), run=False, quiet=True)._repr_html_()
    assert card.count("<svg") == 2 and calls.read_text().count("called") == 2  # the recorder does record


def test_allow_takes_a_path_as_the_shell_writes_it_and_refuses_what_is_no_rule(tmp_path, monkeypatch):
    monkeypatch.chdir(Path(__file__).parent)
    line = line_of(pinned, "torch.zeros")
    for rule in ([f"./test_check.py:{line}"], f"../report/test_check.py:{line}"):
        result = neurondev.check(pinned, torch.randn(4), allow=rule)
        assert [pin.node for pin in result.pins] == ["out"]  # the pin is there, and allowed
    for other in (f"./test_check.py:{line + 1}", "./other_file.py:" + str(line), "test_check.py"):
        with pytest.raises(neurondev.DevicePinsError, match="torch.zeros"):
            neurondev.check(pinned, torch.randn(4), allow=other)  # another line, another file, no line: not this pin
    with pytest.raises(neurondev.InvalidOptionError, match="list of strings"):
        neurondev.check(pinned, torch.randn(4), allow=[line])


def takes_allow(x, allow=False):
    return torch.zeros(4, device=x.device) + x if allow else x


def test_an_option_named_like_the_functions_own_argument_is_refused_with_the_form_that_works():
    import functools

    with pytest.raises(neurondev.OptionShadowsArgumentError, match=r"functools.partial\(fn, allow=...\)"):
        neurondev.check(takes_allow, torch.randn(4), allow=True)
    with pytest.raises(neurondev.DevicePinsError):
        neurondev.check(functools.partial(takes_allow, allow=True), torch.randn(4))
