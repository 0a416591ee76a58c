"""Device selection: Neuron when torch_neuronx imports, else PJRT (the user's PJRT_DEVICE, or CPU)."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest
import torch

from neurondev.xla import choose_runtime
from tests.helpers import HIDE_TORCH_XLA, run_python

NO_NEURON = ModuleNotFoundError("No module named 'torch_neuronx'")


def test_neuron_is_chosen_when_torch_neuronx_imports():
    choice = choose_runtime(neuron_error=None, environ={}, xla_imported=False)
    assert (choice.runtime, choice.set_pjrt_device, choice.neuron_error, choice.chosen_by) == ("neuron", None, None, None)


def test_users_pjrt_device_is_respected():
    choice = choose_runtime(neuron_error=NO_NEURON, environ={"PJRT_DEVICE": "TPU"}, xla_imported=False)
    assert (choice.runtime, choice.pjrt_device, choice.set_pjrt_device, choice.chosen_by) == ("pjrt", "TPU", None, "user")


def test_torch_xla_already_imported_keeps_its_own_choice():
    choice = choose_runtime(neuron_error=NO_NEURON, environ={}, xla_imported=True)
    assert choice.set_pjrt_device is None and choice.chosen_by == "torch_xla"


def test_cpu_is_set_only_when_nothing_else_decided():
    choice = choose_runtime(neuron_error=NO_NEURON, environ={}, xla_imported=False)
    assert (choice.runtime, choice.set_pjrt_device, choice.chosen_by) == ("pjrt", "CPU", "neurondev")
    assert choice.neuron_error == "ModuleNotFoundError: No module named 'torch_neuronx'"


@pytest.mark.xla
def test_this_machine_runs_on_the_real_runtime_it_has():
    result = run_python("""
        import json, os, neurondev.xla as x
        from neurondev.xla import runtime
        before = dict(os.environ)
        described = x.describe()  # neurondev imports torch_xla here
        changed = sorted(k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k))
        print("noted:", changed == sorted(runtime.runtime_environment()), "PJRT_DEVICE" in changed or described["runtime"] != "pjrt")
        print("rng noted:", runtime.initial_rng_state() is not None)
        print(json.dumps(described))
    """)
    assert result.returncode == 0, result.stderr
    # what importing torch_xla set in the environment, and XLA's first random state, are noted once, when neurondev imports it
    assert "noted: True True" in result.stdout and "rng noted: True" in result.stdout
    described = __import__("json").loads(result.stdout.strip().splitlines()[-1])
    if importlib.util.find_spec("torch_neuronx") is None:
        assert described["runtime"] == "pjrt" and described["PJRT_DEVICE"] == "CPU"
        assert described["device"] == "xla:0"
        assert described["chosen_by"] == "neurondev" and "torch-neuronx is not installed" in described["neuron_error"]
    else:
        assert described["runtime"] == "neuron"


@pytest.mark.xla
def test_a_pjrt_device_the_user_set_is_kept_even_when_it_cannot_start():
    result = run_python(
        """
        import os, neurondev, neurondev.xla as x
        try:
            x.device()
        except neurondev.XlaUnavailableError as error:
            print("ERROR", error)
        print("PJRT_DEVICE", os.environ["PJRT_DEVICE"])
    """,
        PJRT_DEVICE="NOSUCHDEVICE",
    )
    assert "ERROR torch_xla imported but its device could not start" in result.stdout, result.stderr
    assert "not set by neurondev, left as it was" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "PJRT_DEVICE NOSUCHDEVICE"


def test_without_torch_xla_everything_but_the_runs_works_and_a_run_says_how_to_install_it():
    result = run_python(
        textwrap.dedent(HIDE_TORCH_XLA)
        + textwrap.dedent("""
        import torch, neurondev
        from neurondev import examples
        fn, args, kwargs = examples.get("seed").build()
        captured = neurondev.capture(fn, *args)
        print("pins", len(neurondev.diagnose(captured)))
        gm, rewrites = neurondev.rewrite_copy(captured.graphs[0])
        print("rewrites", len(rewrites))
        try:
            neurondev.run_on_xla(gm, *args)
        except neurondev.XlaUnavailableError as error:
            print("ERROR", error)
        print("torch_xla" in sys.modules)
        ex = neurondev.explain(fn, *args, quiet=True)
        print(len(ex.pins), len(ex.rewrites), ex.before, ex.after)
        print(ex.skipped.kind, ex.skipped.device, ex.skipped.error)
        print("<svg" in ex._repr_html_())
    """)
    )
    lines = result.stdout.strip().splitlines()
    assert lines[:2] == ["pins 1", "rewrites 1"], result.stderr
    assert lines[2].startswith("ERROR running on an XLA device needs torch_xla")
    minor = ".".join(torch.__version__.split(".")[:2])
    assert f"pip install 'torch-xla=={minor}.*'" in lines[2]
    assert lines[3] == "False"
    assert lines[4] == "1 1 () ()"  # explain: pins and rewrites, no runs, and why
    assert lines[5].startswith("no device XLA running on an XLA device needs torch_xla") and "pip install" in lines[5]
    assert lines[6] == "True"


def test_which_runtime_is_pjrt_cpu_decides_the_world_sizes_ranks_allow():
    assert choose_runtime(neuron_error=NO_NEURON, environ={}, xla_imported=False).pjrt_cpu
    assert not choose_runtime(neuron_error=NO_NEURON, environ={"PJRT_DEVICE": "TPU"}, xla_imported=False).pjrt_cpu
    assert not choose_runtime(neuron_error=None, environ={}, xla_imported=False).pjrt_cpu


@pytest.mark.xla
def test_once_torch_xla_is_imported_it_is_returned_as_it_is_and_nothing_more_is_noted():
    import sys

    from neurondev.trace import process
    from neurondev.xla import runtime

    runtime.load_torch_xla()
    noted = (process.runtime_environment(), process.initial_xla_rng())
    assert runtime.load_torch_xla() is sys.modules["torch_xla"]
    assert (process.runtime_environment(), process.initial_xla_rng()) == noted
