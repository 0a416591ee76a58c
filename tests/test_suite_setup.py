"""The suite tests what users run: the Pythons it starts and its own workers keep torch's, torch_xla's and Python's
defaults (no XLA optimisation level, guard setting or garbage-collector threshold of its own);
tests/browser/test_group.py checks the group of the tests that share Chromium or the explained GPT-2."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import _SLOWEST_FIRST
from tests.helpers import run_python

_SETTINGS = (
    "import gc, os, torch._dynamo; print(gc.get_threshold()); print(os.environ.get('XLA_FLAGS')); "
    "print(os.environ.get('TORCHINDUCTOR_VEC_ISA_OK')); print(torch._dynamo.config.enable_cpp_symbolic_shape_guards)"
)


def _defaults() -> list[str]:
    """What a user's plain Python has: isolated (-I: no PYTHONPATH, no user site), with no variable of the suite's."""
    environ = {name: value for name, value in os.environ.items() if name not in ("XLA_FLAGS", "TORCHINDUCTOR_VEC_ISA_OK", "PYTHONPATH")}
    done = subprocess.run([sys.executable, "-I", "-c", _SETTINGS], capture_output=True, text=True, env=environ, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_python_the_suite_starts_and_its_workers_run_with_the_defaults_a_user_has():
    import torch._dynamo.guards

    config = torch._dynamo.config
    done = run_python(_SETTINGS)
    assert done.returncode == 0, done.stderr
    defaults = _defaults()
    started = done.stdout.splitlines()
    assert started[:1] + started[2:] == defaults[:1] + defaults[2:] and "optimization_level" not in started[1]
    threshold, _, vec_isa, cpp_guards = defaults
    assert [str(gc.get_threshold()), str(os.environ.get("TORCHINDUCTOR_VEC_ISA_OK")), str(config.enable_cpp_symbolic_shape_guards)] == [
        threshold,
        vec_isa,
        cpp_guards,
    ]
    assert "optimization_level" not in os.environ.get("XLA_FLAGS", "")  # torch_xla's own flags, as it set them on import
    assert "<lambda>" not in repr(torch._dynamo.guards.profile_guard_manager)  # dynamo's own, not a stand-in


def test_the_slowest_modules_are_handed_out_first(request):
    """Notebooks, browser tests and the tests that start a Python of their own come before every other test, in
    _SLOWEST_FIRST's order, so that the two workers end together (with pytest's own order they did not)."""
    rank = [
        next((i for i, part in enumerate(_SLOWEST_FIRST) if part in item.nodeid), len(_SLOWEST_FIRST)) for item in request.session.items
    ]
    assert rank == sorted(rank)


def _pins(name: str) -> dict[str, str]:
    path = Path(__file__).resolve().parent.parent / "requirements" / name
    return dict(line.strip().lower().split("==", 1) for line in path.read_text().splitlines() if "==" in line and not line.startswith("#"))


def test_the_one_list_of_tested_versions_is_what_requirements_pins_and_doctor_reads():
    from neurondev._compat import CHECKED_WITH, TESTED_ALONE, TESTED_IPYTHON, TESTED_PAIR
    from neurondev.cli.doctor import pair_verdict

    pair, current = _pins("constraints.txt"), _pins("constraints-current.txt")
    assert (pair["torch"], pair["torch-xla"]) == TESTED_PAIR and "torch-xla" not in current
    assert (current["torch"],) == TESTED_ALONE and pair["ipython"] == current["ipython"] == TESTED_IPYTHON
    assert CHECKED_WITH["torch"] == (TESTED_PAIR[0], *TESTED_ALONE)
    assert pair_verdict(f"{TESTED_PAIR[0]}+cu128", TESTED_PAIR[1]) == (
        True,
        f"torch {TESTED_PAIR[0]} + torch-xla {TESTED_PAIR[1]}: the pair neurondev is tested with",
    )
