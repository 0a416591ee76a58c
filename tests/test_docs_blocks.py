"""Every code block of getting started and the how-to guides runs as written, each in a Python (or a shell) of its
own: Python blocks as scripts, a pytest block under pytest, a torchrun job under torchrun, each shell command with
its documented exit code. The files the pages call yours (train.py, mymodel.py, ...) are made for them here. The
README's block runs in tests/test_readme.py, with the facts it prints; `make demo` and `make test` are what CI runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "docs" / "getting-started.md", *sorted((ROOT / "docs" / "how-to").glob("*.md"))]
pytestmark = [pytest.mark.xla, pytest.mark.docs]

# The files a page names as the user's own, as small as the commands need.
YOURS = {
    "train.py": """\
import argparse, os
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
epochs = parser.parse_args().epochs
if "WORLD_SIZE" in os.environ:  # under torchrun
    import torch.distributed as dist
    dist.init_process_group("gloo")
step = torch.compile(lambda x: (x * 2).relu().sum(), backend="eager")
for _ in range(epochs):
    for batch in torch.ones(24, 8).split(4):
        step(batch)
if "WORLD_SIZE" in os.environ:
    dist.destroy_process_group()
""",
    "mypkg/model.py": """\
import torch


def forward(x):
    out = torch.empty(4, 64, device=x.device)   # frozen to cpu when traced
    out.copy_(torch.relu(x))
    return out
""",
    "mymodel.py": "def forward(x):\n    return (x @ x.T).relu()\n",
    "model.py": "def step(x):\n    return (x * 2).relu()\n",
    "tests/test_devices.py": """\
import torch


def step(x):
    return x.new_zeros(x.shape) + x


def test_step_has_no_device_pins(neurondev_check):
    neurondev_check(step, torch.randn(8))
""",
}
# A command's exit code when it is not 0, as its page says: a job that diverges, a rank that fails.
EXITS = {"ragged_ranks.py --fail-at 3": 1, "ragged_ranks.py": 1}  # torchrun exits 1 when a rank does
# Commands a page shows that the suite does not run here, with why.
NOT_HERE = {"make demo": "CI runs make test; make demo is make setup and neurondev demo", "make test": "CI runs it"}
# Commands another test runs as written, with the facts they print (not only their exit code): run once, there.
RUN_ELSEWHERE = {
    "torchrun --nproc-per-node 2 -m neurondev watch --json ranks.json neurondev/gallery/ragged_ranks.py": "notebooks/08_native_devices.ipynb",
    "torchrun --nproc-per-node 2 -m neurondev watch --json ranks.json neurondev/gallery/ragged_ranks.py --pad": "notebooks/08_native_devices.ipynb",
    "torchrun --nproc-per-node 2 -m neurondev check model.py:step --input 'randn(8)' --target hostdev": "tests/integrations/test_ranks.py",
}


def blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.S)


def _cases() -> list:
    cases = []
    for page in PAGES:
        name = page.relative_to(ROOT / "docs").with_suffix("").as_posix()
        cases += [pytest.param("python", block, id=f"{name}-python{n}") for n, block in enumerate(blocks(page, "python"), 1)]
        for n, block in enumerate(blocks(page, "bash"), 1):
            commands = [line.split("   #")[0].strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]
            cases += [
                pytest.param("bash", command, id=f"{name}-bash{n}-{m}")
                for m, command in enumerate(commands, 1)
                if command.split()[:2] not in NOT_HERE_WORDS and command not in RUN_ELSEWHERE
            ]
    return cases


NOT_HERE_WORDS = [command.split() for command in NOT_HERE]


def _folder(tmp_path: Path) -> Path:
    for name, text in YOURS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _environ() -> dict[str, str]:
    """The user's environment: neurondev importable from this checkout, torch_xla's own choice of device."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


def _assignments(command: str) -> tuple[str, dict[str, str]]:
    """A command without the NAME=value words before it, and those as its environment."""
    words, given = shlex.split(command), {}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        given[name] = value
    return shlex.join(words), given


def _argv(command: str, folder: Path) -> list[str]:
    """The command as the shell would run it, with this Python's neurondev, torchrun and pytest."""
    words = shlex.split(command)
    if words[0] == "neurondev":
        return [sys.executable, "-m", "neurondev", *words[1:]]
    if words[0] == "torchrun":
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            *[str(ROOT / w) if w.startswith("neurondev/") else w for w in words[1:]],
        ]
    raise AssertionError(f"a command the docs test does not know how to run: {command}")


@pytest.mark.parametrize(("language", "code"), _cases())
def test_the_block_runs_as_written(language, code, tmp_path):
    folder = _folder(tmp_path)
    expected, given = 0, {}
    if language == "bash":
        command, given = _assignments(code)
        argv = _argv(command, folder)
        expected = next((exit for tail, exit in EXITS.items() if code.endswith(tail)), 0)
    elif "def test_" in code:
        (folder / "test_block.py").write_text(code)
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_block.py"]
    elif code.startswith("# job.py: torchrun"):
        (folder / "job.py").write_text(code)
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "job.py"]
    else:
        (folder / "block.py").write_text(code)
        argv = [sys.executable, "block.py"]
    done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=600, env=_environ() | given)
    assert done.returncode == expected, f"{code}\nexit {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


def test_every_page_with_code_is_run_and_every_command_left_out_says_why():
    assert len(_cases()) >= 15
    shown = {
        line.split("   #")[0].strip()
        for page in [ROOT / "README.md", *PAGES]
        for block in blocks(page, "bash")
        for line in block.splitlines()
    }
    assert {command for command in shown if command.split()[:2] in NOT_HERE_WORDS} == set(NOT_HERE)
    assert set(RUN_ELSEWHERE) <= shown  # each still on its page, as the other test runs it
    runs = (ROOT / "scripts" / "make_notebooks.py").read_text()  # notebook 08's job, run and its facts checked by test_notebooks
    assert '"-m", "neurondev", "watch", "--json", f"{folder}/ranks.json", ragged_ranks.__file__, *arguments' in runs
    assert 'watched_job("--pad")' in runs
    from tests.integrations.test_ranks import DOCS_COMMAND  # run there with YOURS["model.py"], its ranks' words checked

    assert DOCS_COMMAND in RUN_ELSEWHERE
