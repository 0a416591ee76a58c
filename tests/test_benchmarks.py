"""Every benchmark runs to its end once, at its smallest size (``--tiny``), so no rename breaks one unseen; the
figures themselves are `make bench`'s, never asserted (they depend on the machine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
RATIO = re.compile(r"\d+\.\d\d")


def run(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / name), "--tiny"],
        cwd=BENCHMARKS.parent,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(BENCHMARKS.parent)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_pass_benchmark_runs_and_prints_its_ratios_against_a_bare_loop():
    out = run("bench_pass.py")
    assert "call/floor" in out and RATIO.search(out.splitlines()[-1])


def test_the_native_device_benchmark_runs_and_prints_accounted_against_plain_and_the_floor():
    out = run("bench_native_device.py")
    assert "gpt2 tiny" in out and RATIO.search(out)


@pytest.mark.xla
@pytest.mark.parametrize(
    "name, words",
    [
        ("bench_xla.py", "(c)/(a)"),
        ("bench_native.py", "worst rewritten/native"),
        ("bench_explain.py", "explain/floor"),
        ("bench_watch.py", "watched/bare"),
    ],
)
def test_each_xla_benchmark_runs_to_its_end_and_prints_its_ratio(name, words):
    out = run(name)
    assert words in out and RATIO.search(out)


def test_the_usage_error_benchmark_runs_and_prints_each_case_against_python_and_torch():
    out = run("bench_usage.py")
    assert "explain: input spec cut short" in out and RATIO.search(out.splitlines()[-1])
