"""Drawing without root: the setup's drawing step installs graphviz-pure into a venv; neurondev finds it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import neurondev
from neurondev.render.dot import graph_dot, side_by_side
from neurondev.render.svg import find_dot, render_svg

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["pytester"]


def test_without_a_dot_on_path_neurondev_draws_with_the_venvs_graphviz_pure(monkeypatch, seed_capture):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("NEURONDEV_DOT", raising=False)
    program = find_dot()
    assert program is not None and program.source == "graphviz-pure"
    assert Path(program.path).parent == Path(sys.executable).parent
    gm = seed_capture.graphs[0]
    dot_text = side_by_side(graph_dot(gm, pins=neurondev.find_pins(gm)))
    svg = render_svg(dot_text, program=program)
    assert svg.startswith("<svg") and "device=cpu (frozen)" in svg
    drawn_by_pure = subprocess.run([program.path, "-Tsvg"], input=dot_text.encode(), capture_output=True, check=True).stdout.decode()
    assert "(graphviz-pure)" in drawn_by_pure and svg == drawn_by_pure[drawn_by_pure.index("<svg") :]


def test_a_system_dot_comes_first_and_neurondev_dot_overrides_it(monkeypatch, tmp_path):
    monkeypatch.delenv("NEURONDEV_DOT", raising=False)
    system = shutil.which("dot")
    if system is not None and Path(system).resolve().name != "graphviz-pure":
        assert find_dot().source == "system"
    link = tmp_path / "mydot"
    link.symlink_to(Path(sys.executable).with_name("graphviz-pure"))
    monkeypatch.setenv("NEURONDEV_DOT", str(link))
    assert find_dot().path == str(link) and find_dot().source == "NEURONDEV_DOT"
    assert render_svg("digraph { a -> b }").startswith("<svg")


SYSTEM_PYTHON = Path("/usr/bin/python3")  # another user can run it (pyenv's lives under /root)


def _switch_user() -> bool:
    """Run the step as user nobody when we are root and there is a Python nobody can run with venv."""
    if os.geteuid() != 0 or not SYSTEM_PYTHON.exists():
        return False
    probe = subprocess.run([str(SYSTEM_PYTHON), "-c", "import ensurepip, venv"], capture_output=True, timeout=60)
    return probe.returncode == 0


def _as_user_without_root(command: list[str], home: Path) -> list[str]:
    if not _switch_user():
        return command
    shutil.chown(home, "nobody")
    for path in home.rglob("*"):
        shutil.chown(path, "nobody") if not path.is_symlink() else None
    return [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "nobody", "--", *command]


@pytest.fixture()
def home():
    """A folder another user can reach (pytest's tmp_path is private to root)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="neurondev-nonroot-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_setup_drawing_step_without_root_or_system_dot_gives_the_venv_a_dot(home):
    script = home / "setup_drawing.sh"
    shutil.copy(ROOT / "scripts/setup_drawing.sh", script)
    venv = home / "venv"
    base = str(SYSTEM_PYTHON) if _switch_user() else sys.executable
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
    shims = home / "bin"  # what the script needs, and no dot
    shims.mkdir()
    for tool in ("id", "ln", "bash", "env"):
        (shims / tool).symlink_to(shutil.which(tool))
    environ = {"PATH": f"{shims}", "HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    command = _as_user_without_root([shutil.which("env"), f"PATH={shims}", f"HOME={home}", "bash", str(script), str(venv)], home)
    # a plain user's shell: not the suite's PYTHONPATH
    shell = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=shell | environ)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "installing the pip-only graphviz-pure" in done.stdout
    assert (venv / "bin" / "dot").resolve().name == "graphviz-pure"
    draw = "import graphviz; print(graphviz.Source('digraph { a -> b }').pipe(format='svg').decode())"
    drawn = subprocess.run(
        [str(venv / "bin" / "python"), "-c", draw],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(venv / "bin"), "HOME": str(home)},
    )
    assert drawn.returncode == 0, drawn.stderr
    assert "<svg" in drawn.stdout and "graphviz-pure" in drawn.stdout


def test_a_test_marked_dot_fails_saying_what_to_install_when_no_dot_is_found(pytester, monkeypatch):
    from tests.conftest import pytest_runtest_setup

    pytester.makeini("[pytest]\nmarkers =\n    dot: draws\n")
    draws, plain = pytester.getitems("import pytest\n@pytest.mark.dot\ndef test_draws():\n    pass\ndef test_plain():\n    pass\n")
    pytest_runtest_setup(draws)  # a dot is found here: nothing happens
    monkeypatch.setenv("NEURONDEV_DOT", "/no/such/dot")
    with pytest.raises(pytest.fail.Exception, match="make setup"):
        pytest_runtest_setup(draws)
    pytest_runtest_setup(plain)  # a test that does not draw runs without dot
