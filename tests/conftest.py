"""The suite's setup (threads of every process it starts; the order and groups of its tests) and shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Two workers share the machine's two cores: one intra-op thread each, for the workers and for the notebook
# kernels and subprocesses they start (which inherit the variable), instead of four threads fighting for two.
os.environ["OMP_NUM_THREADS"] = "1"
# Nothing else of torch's, torch_xla's or Python's defaults is changed: no XLA optimisation level, guard setting
# or garbage-collector threshold of the suite's own decides what a verdict is judged on (tests/test_suite_setup.py).


def pytest_configure(config):
    """torch is set up in the processes that run tests; xdist's controller, which only hands them out, never
    imports it (importing torch and neurondev took it 3.5 s before it started the workers; a run of one small
    test module: 7.9 s -> 7.1 s, measured)."""
    if getattr(config, "workerinput", None) is None and config.getoption("numprocesses", None):
        return
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def seed_capture():
    import neurondev
    from neurondev import examples

    fn, args, kwargs = examples.get("seed").build()
    return neurondev.capture(fn, *args, **kwargs)


@pytest.fixture(scope="session")
def seed_explained():
    """The seed explained with the defaults, once per worker: tests read it, none changes it (records are frozen)."""
    import neurondev
    from neurondev import examples

    fn, args, kwargs = examples.get("seed").build()
    return neurondev.explain(fn, *args, **kwargs, quiet=True)


@pytest.fixture(scope="session")
def gpt2_explained(gpt2):
    """The tiny GPT-2 explained with the defaults, once per worker (shared by the report, Model Explorer and browser tests)."""
    import neurondev

    model, args, kwargs = gpt2
    return neurondev.explain(model, *args, **kwargs, quiet=True)


@pytest.fixture(scope="session")
def process_group():
    """A gloo group of one process for the whole session; yields its name."""
    from neurondev import examples

    with examples.gloo_group() as name:
        yield name


@pytest.fixture(scope="session")
def collective_capture(process_group):
    import torch

    import neurondev
    from neurondev import examples

    fn = examples.collective_function(1, process_group)
    return neurondev.capture(fn, torch.arange(64, dtype=torch.float32))


@pytest.fixture(scope="session")
def gpt2():
    pytest.importorskip("transformers")
    from neurondev.testing import tiny_gpt2

    return tiny_gpt2()


@pytest.fixture(scope="session")
def gpt2_capture(gpt2):
    import neurondev

    model, args, kwargs = gpt2
    return neurondev.capture(model, *args, **kwargs)


# Then the modules whose tests each start a Python of their own (4-12 s a test): last in the run, they left one
# worker running them alone for 13 s while the other had finished (measured with a per-test timeline).
_SLOWEST_FIRST = (
    "test_notebooks.py",
    "test_real_trainers.py",
    "browser/",
    "test_never_kill.py",
    "test_rule_examples.py",
    "test_docs_blocks.py",
    "test_ranks.py",
    "test_focus.py",
    "test_readme.py",
    "test_watch.py",
    "test_runtime.py",
    "test_analysis.py",
    "test_cli.py",
    "test_check.py",
    "test_user_state.py",
)


# Tests that share a worker's costliest fixtures run on one worker (an xdist group, one unit of work): one
# Chromium, one explained GPT-2 and one build of the docs site (10 s) for the run instead of one a worker (the site's,
# module-scoped, was built again each time a worker came back to its module: 3 builds a run). A test that reaches
# them another way (request.getfixturevalue) is marked with the group itself.
SHARED_GROUP = "browser-and-gpt2"
_SHARED_FIXTURES = ("browser", "gpt2_explained", "site")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    """The longest tests first. With ``--dist loadgroup`` (pyproject.toml) every test is its own unit, handed
    out in this order to whichever worker is free: two workers finish together instead of one running the
    notebooks while the other waits (worksteal gave the first worker the whole first half of this list)."""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in _SHARED_FIXTURES):
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUP))
    yield  # xdist names each grouped test's unit here, from its xdist_group marks
    for item in items:
        _carry_over_the_group(item)
    items.sort(key=lambda item: next((i for i, part in enumerate(_SLOWEST_FIRST) if part in item.nodeid), len(_SLOWEST_FIRST)))


def _carry_over_the_group(item) -> None:
    """xdist 3.8 names a grouped test's unit ("...::test@group") by writing ``item._nodeid``, which pytest 9
    neither has nor reads (its node id is ``item._id``): the name xdist wrote is given to pytest 9 too."""
    named = getattr(item, "_nodeid", None)
    if not named or named == item.nodeid or not hasattr(item, "_id"):
        return
    from _pytest.nodes import coerce_node_id  # pytest 9

    item._id = coerce_node_id(named)


def pytest_runtest_setup(item):
    """A test that draws fails at once, saying what to install, when no dot is found: a card without
    its drawings would otherwise pass the assertions that do not look at them."""
    if item.get_closest_marker("dot") is None:
        return
    from neurondev.render.svg import find_dot

    if find_dot() is None:
        pytest.fail(
            "this test draws with Graphviz's dot and none was found: run `make setup` (apt-get install -y graphviz, or pip install graphviz-pure)"
        )


def _mutmut_frames_are_neurondevs() -> None:
    """Under make mutate, each mutated function of neurondev is called through mutmut's trampoline: its frames are
    neurondev's machinery (as the function's own are), never the user's line a count is put on."""
    import mutmut

    from neurondev.trace import source

    tool = str(Path(mutmut.__file__).resolve().parent)
    original = source.in_neurondev
    source.in_neurondev = lambda file: file.startswith(tool) or original(file)


if Path.cwd().name == "mutants" or "MUTANT_UNDER_TEST" in os.environ:
    _mutmut_frames_are_neurondevs()
