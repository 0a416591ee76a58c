"""Run a rule's example (``docs/rules/examples/CODE.py`` and ``CODE_instead.py``) as a user would, by the call that
reports it, in a Python of its own and a folder of its own: what neurondev printed, and whether that reports the rule
(scripts/make_rule_cards.py keeps it as the rule page's card; the suite runs it again)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import json
import multiprocessing
import os
import re
import select
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["EXAMPLES", "SITE_FROM_A_RULE", "Example", "card", "codes", "comparable", "example", "instead", "reports", "run"]

# A card links each finding to its rule's page beside it in the built site (site/rules/CODE.html): the same text on
# every machine, not this checkout's file:// path.
SITE_FROM_A_RULE = "../"
# What gloo prints as each rank connects ("[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected
# peer ranks is : 1"), written piece by piece to a stdout the ranks share: the pieces of two ranks interleave at any
# piece (a clean-clone run printed "Expected number of connected peer ranks is : 1" alone on a line). So its words are
# cut out wherever they land, and its numbers are the lines of digits left before the job's first line of its own:
# every rank connects before its program runs, so gloo prints before the job does.
_GLOO_WORDS = re.compile(r"\[Gloo\] Rank | is connected to | peer ranks\. |Expected number of connected peer ranks is : ")
_GLOO_NUMBERS = re.compile(r"[\d\s]*")
_NOISE = re.compile(r"^W\d{4} |^WARNING:root:Defaulting|\[Gloo\]")
# One file per rule code and one with the code to use instead, as ruff keeps a fixture per rule: linted and formatted
# like all code (make lint), run by a user as `python docs/rules/examples/ND101.py`, shown on the rule's page.
EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "rules" / "examples"
_HEADER = re.compile(r"^# (?P<key>run with|needs): (?P<value>.+)$", re.M)


@dataclasses.dataclass(frozen=True)
class Example:
    """A rule's example: ``path`` (a script that reports the rule), ``instead`` (the same program written so that it
    does not), ``command`` (how to run it, when not with ``python``: a torchrun job), ``needs`` (what no machine of
    the project has: the example is shown, not run). The last two are the script's own first line, ``# run with: ...``
    or ``# needs: ...``."""

    path: Path
    instead: Path
    command: str = ""
    needs: str = ""


def example(code: str) -> Example:
    """Rule ``code``'s example files; FileNotFoundError naming the file when the folder has none."""
    path, instead = EXAMPLES / f"{code}.py", EXAMPLES / f"{code}_instead.py"
    for needed in (path, instead):
        if not needed.is_file():
            raise FileNotFoundError(f"{code} has no example {needed.name} in {EXAMPLES}")
    header = {match["key"]: match["value"].strip() for match in _HEADER.finditer(path.read_text().split("\n", 1)[0])}
    return Example(path, instead, header.get("run with", ""), header.get("needs", ""))


def run(script: Path, command: str = "") -> tuple[int, str]:
    """Run ``script`` in a folder of its own, with ``python`` or the torchrun ``command`` its page names: exit code and
    output."""
    if not command and _reads_what_it_imported(script.read_text()):
        return _run_without_xla(script)
    if not command:
        return _pool().submit(_run_here, str(script)).result(timeout=600)
    with tempfile.TemporaryDirectory() as folder:
        procs = re.search(r"--nproc-per-node[= ](\d+)", command)  # torchrun --nproc-per-node N -m neurondev watch ND412.py
        assert procs is not None, f"a torchrun command names its --nproc-per-node: {command}"
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={procs[1]}",
            "-m",
            "neurondev",
            "watch",
            str(script),
        ]
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=600, env=_environ(os.environ))
    said = _quiet(done.stdout)
    return done.returncode, said if done.returncode in (0, 1) else said + done.stderr[-3000:]


def _reads_what_it_imported(source: str) -> bool:
    """Whether the example's output depends on what its own code imported: a watched loop says whether torch_xla was
    loaded by it, so it cannot run in a Python whose server imported torch_xla for it."""
    return "neurondev.watch(" in source and bool(_xla_if_installed())


def _run_without_xla(script: Path) -> tuple[int, str]:
    """``_run_here`` in a Python of its own forked from one that imported torch, neurondev and pandas, never torch_xla."""
    server, requests, answers, lock = _plain_server()
    with lock, tempfile.TemporaryDirectory() as folder:
        said = Path(folder) / "said.json"
        requests.write(json.dumps([str(script), str(said)]) + "\n")
        requests.flush()
        ready, _, _ = select.select([answers], [], [], 600)
        if not ready or not answers.readline():
            raise RuntimeError(f"the Python that runs the rule examples ended or hung (exit {server.poll()})")
        if not said.exists():
            return 1, "the example's Python ended without a result (killed by a signal, or os._exit)"
        status, printed = json.loads(said.read_text())
    return status, printed


# The plain server: a request per line (the example's path, where to write its result), a child forked for each,
# a line on the answer pipe when it has ended.
_SERVER = """
import json, os, sys
import torch, neurondev, pandas
from neurondev.rule_runs import _run_here
answer = int(sys.argv[1])
for line in sys.stdin:
    script, said = json.loads(line)
    child = os.fork()
    if child == 0:
        os.close(answer)
        with open(said + ".part", "w") as out:
            json.dump(_run_here(script), out)
        os.rename(said + ".part", said)
        os._exit(0)
    os.waitpid(child, 0)
    os.write(answer, b"\\n")
"""


@functools.cache
def _plain_server() -> tuple[subprocess.Popen, Any, Any, threading.Lock]:
    """The server of the examples that must not find torch_xla imported, started once, in their environment."""
    read, write = os.pipe()
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(write)], stdin=subprocess.PIPE, pass_fds=(write,), text=True, env=_environ(os.environ)
    )
    os.close(write)
    return server, server.stdin, os.fdopen(read), threading.Lock()


def _environ(environ: Any) -> dict[str, str]:
    """The example's environment: the rule pages' links, one thread per rank, torch_xla's own choice of device."""
    return {k: v for k, v in environ.items() if k != "PJRT_DEVICE"} | {"NEURONDEV_DOCS_URL": SITE_FROM_A_RULE, "OMP_NUM_THREADS": "1"}


def _quiet(text: str) -> str:
    """The job's output without gloo's connection lines and torch's warnings."""
    lines = [line for line in _GLOO_WORDS.sub("", text).splitlines(keepends=True) if not _NOISE.search(line)]
    first_of_its_own = next((i for i, line in enumerate(lines) if not _GLOO_NUMBERS.fullmatch(line)), len(lines))
    return "".join(lines[first_of_its_own:])


@functools.cache
def _pool() -> concurrent.futures.ProcessPoolExecutor:
    """Two Pythons at a time (the machines have two cores), each new for one example: forked from a server that has
    imported torch, neurondev and torch_xla (where installed) in the examples' environment and nothing else, so an
    example pays for what it runs, not for the imports, and torch_xla chose its device as a user's import does."""
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "neurondev", "pandas", *_xla_if_installed()])
    ours = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(_environ(ours))
        forkserver.ensure_running()  # the server starts now, in the examples' environment, which its Pythons inherit
    finally:
        os.environ.clear()
        os.environ.update(ours)
    return concurrent.futures.ProcessPoolExecutor(2, mp_context=context, max_tasks_per_child=1)


def _xla_if_installed() -> list[str]:
    """torch_xla where it is installed: most examples run on an XLA device, and its import is half of their time."""
    import importlib.util

    return ["torch_xla"] if importlib.util.find_spec("torch_xla") is not None else []


def _run_here(script: str) -> tuple[int, str]:
    """In a Python of its own: the example run from a folder of its own (what it writes lands there), its check's
    failure printed."""
    import contextlib
    import io
    import runpy
    import traceback

    import neurondev

    printed = io.StringIO()
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder), contextlib.redirect_stdout(printed):
        try:
            runpy.run_path(script, run_name="__main__")
        except neurondev.DevicePinsError as error:
            print(error)
        except BaseException:  # noqa: BLE001 - an example that fails is reported with its traceback
            return 1, _quiet(printed.getvalue()) + traceback.format_exc()
    return 0, _quiet(printed.getvalue())


def comparable(text: str) -> str:
    """A card with its measured numbers (how many elements differ, by how much: the machine's floats) left out, and a
    watch's costliest lines (their order is the machine's timing's)."""
    text = re.sub(r"Where the time went \(the runtime's own clocks\): .*? watched\. ", "Where the time went: #. ", text)
    return re.sub(r"\d+ of \d+ elements|\d+\.\d+(e[-+]\d+)?", "#", text)


def reports(text: str, code: str) -> bool:
    """Whether neurondev's output names the rule: '[ND101]', '[ND412, <url>]' or a finding's 'ND401' in a printed list."""
    return re.search(rf"\[{code}[\],]|'{code}'", text) is not None


def card(code: str) -> str:
    """What neurondev prints for rule ``code``'s example; SystemExit when it fails or does not report the rule."""
    chosen = example(code)
    status, said = run(chosen.path, chosen.command)
    if status != (1 if chosen.command else 0) or not reports(said, code):  # a diverging job exits 1
        raise SystemExit(f"{code}'s example (exit {status}) did not report {code}:\n{said}")
    return said


def instead(code: str) -> str:
    """What neurondev prints for the code to use instead of ``code``'s example: '' when it reports nothing of the rule."""
    chosen = example(code)
    status, said = run(chosen.instead, chosen.command)
    return said if status != 0 or reports(said, code) else ""


def codes(only: Sequence[str] = ()) -> list[str]:
    """The rules whose example runs on this project's machines (those named, or all)."""
    from neurondev.rulebook import RULES

    return [rule.code for rule in RULES if not example(rule.code).needs and (not only or rule.code in only)]
