"""Verification: each gallery pattern in user code gets the fix its paragraph recommends, proven by tracing the
fixed code again; a fix that fails a check (a pin left, values changed, a host value on XLA) is not verified."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch

import neurondev
from neurondev import examples
from neurondev.render.sentences import why_text
from neurondev.report.fixes.edits import propose
from neurondev.report.fixes.records import FixCheck
from neurondev.report.fixes.verify import verify

pytestmark = pytest.mark.xla


def test_the_gallery_says_which_patterns_have_a_fix_and_which_have_none():
    """Each pattern's stored fix is checked against a fresh explain by tests/gallery/test_examples.py."""
    stored = {name: example.fix for name, example in examples.CATALOGUE.items()}
    fixed = {name for name, fix in stored.items() if not fix.startswith(("no spelling", "nothing to fix"))}
    assert len(fixed) == 14 and all(" = " in stored[name] and "device=" not in stored[name] for name in fixed)
    assert {name for name, fix in stored.items() if fix.startswith("no spelling")} == {"arange", "rotary", "to-other-device"}
    assert {name for name, fix in stored.items() if fix.startswith("nothing")} == {"no-device-upload", "like-and-new", "gpt2"}


@pytest.fixture()
def user_module(tmp_path):
    """Write user code into a file and import it, as a user's module is."""
    made = []

    def write(source: str):
        path = tmp_path / f"user_{len(made)}.py"
        path.write_text(textwrap.dedent(source))
        name = f"neurondev_test_user_{tmp_path.name}_{len(made)}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        made.append(name)
        return module

    yield write
    for name in made:
        sys.modules.pop(name, None)


def test_a_fix_that_changes_the_dtype_is_not_verified(user_module):
    module = user_module(
        """
        import torch

        def gather(x):
            index = [0, 2]
            picks = torch.tensor(index, device=x.device)
            return x[:, picks]
        """
    )
    (fix,) = neurondev.explain(module.gather, torch.randn(3, 4), run=False, quiet=True).fixes
    # new_tensor would take x's dtype (float indices, which fail): the int64 the original made is spelled
    assert fix.after == "picks = x.new_tensor(index, dtype=torch.int64)"
    assert fix.verified, fix.check


def spelled_differently(name, after):
    """The pattern's own proposal with its fixed statement replaced by ``after``: a wrong fix to verify."""
    with examples.get(name).open() as (fn, args, kwargs):
        captured = neurondev.capture(fn, *args, **kwargs)
        pins = list(neurondev.find_pins(captured.graphs[0]))
        (file,) = propose(pins)
        (edit,) = file.edits
        indent = edit.before[: len(edit.before) - len(edit.before.lstrip())]
        wrong = dataclasses.replace(file, edits=(dataclasses.replace(edit, after=f"{indent}{after}\n"),))
        (fix,) = verify(fn, (args, kwargs), [wrong], pins, target=torch.device("xla"), xla=True)
    return fix


@pytest.mark.parametrize(
    "name, after, check",
    [
        ("literal-cpu", "bias = torch.zeros(x.shape[-1])", FixCheck("host value", place="XLA", where="bias (cpu)")),
        ("literal-cpu", 'bias = torch.zeros(x.shape[-1], device="cpu")  # moved', FixCheck("pins left", count=1, where="torch.zeros")),
        ("ones", "weights = x.new_zeros(x.shape[-1])", "outputs differ"),
        (
            "zeros",
            "total = x.new_zeros(x.shape[-1], dtype=torch.float32)",
            FixCheck("other default differs", before="float64[8]", after="float32[8]"),
        ),
    ],
    ids=["no-device-is-still-the-host", "pin-left", "values-changed", "dtype-baked-in"],
)
def test_a_wrong_fix_fails_the_check_that_catches_it(name, after, check):
    fix = spelled_differently(name, after)
    assert not fix.verified and fix.status == "not verified"
    assert (fix.check.kind if isinstance(check, str) else fix.check) == check, fix.check
    assert why_text(fix).startswith("not verified: "), why_text(fix)


def test_verifying_leaves_the_users_module_file_and_functions_as_they_were(user_module):
    module = user_module(
        """
        import builtins
        import torch

        builtins.neurondev_test_imports = getattr(builtins, "neurondev_test_imports", 0) + 1  # a side effect at import

        def helper(x):
            return torch.zeros(x.shape, device=x.device)

        def entry(x):
            out = helper(x)
            out.copy_(x * 2)
            return out
        """
    )
    import builtins

    text, entry, helper, imports = Path(module.__file__).read_text(), module.entry, module.helper, builtins.neurondev_test_imports
    explanation = neurondev.explain(module.entry, torch.randn(4), run=False, quiet=True)
    assert builtins.neurondev_test_imports == imports  # the fixed copy is compiled, the module is not run again
    (fix,) = explanation.fixes
    assert fix.verified and fix.after == "return x.new_zeros(x.shape, dtype=torch.get_default_dtype())"
    assert sys.modules[module.__name__] is module and module.entry is entry and module.helper is helper
    assert Path(module.__file__).read_text() == text
    assert explanation.patch(root=Path(module.__file__).parent).splitlines()[2:] == [
        "@@ -5,7 +5,7 @@",
        ' builtins.neurondev_test_imports = getattr(builtins, "neurondev_test_imports", 0) + 1  # a side effect at import',
        " ",
        " def helper(x):",
        "-    return torch.zeros(x.shape, device=x.device)",
        "+    return x.new_zeros(x.shape, dtype=torch.get_default_dtype())",
        " ",
        " def entry(x):",
        "     out = helper(x)",
    ]


def test_a_function_in_a_notebook_cell_is_verified_from_the_cells_source():
    import linecache

    source = "import torch\n\ndef two_pins(x):\n    a = torch.zeros(4, device=x.device)  # keep me\n    return a + x\n"
    cell = "/tmp/ipykernel_4242/98765.py"  # how IPython names a cell's code, kept in linecache
    linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
    main = types.ModuleType("neurondev_test_cell_main")  # IPython's __main__: a module whose namespace is the user's
    sys.modules[main.__name__] = main
    exec(compile(source, cell, "exec"), main.__dict__)
    explanation = neurondev.explain(main.two_pins, torch.randn(4), run=False, quiet=True)
    (fix,) = explanation.fixes
    assert fix.verified and fix.after == "a = x.new_zeros(4, dtype=torch.get_default_dtype())  # keep me" and fix.in_notebook_cell
    assert explanation.patch() == ""  # a cell is not a file: the card shows it, the diff leaves it out


def test_pins_of_the_same_node_name_in_two_graphs_are_told_apart(user_module):
    module = user_module(
        """
        import torch

        def two_graphs(x):
            out = torch.zeros(x.shape, device=x.device)
            out.copy_(x)
            print("dynamo splits the function here")
            return two_graphs_tail(out)

        def two_graphs_tail(y):
            out = torch.arange(y.shape[0], device=y.device)
            return y * out
        """
    )
    explanation = neurondev.explain(module.two_graphs, torch.randn(4), run=False, quiet=True)
    assert [(pin.graph, pin.node, pin.function) for pin in explanation.pins] == [(0, "out", "torch.zeros"), (1, "out", "torch.arange")]
    fixed, unspelled = explanation.fixes
    assert fixed.verified and fixed.after == "out = x.new_zeros(x.shape, dtype=torch.get_default_dtype())", (
        fixed.check
    )  # the arange's node is named out too
    assert unspelled.status == "no spelling"


def test_verifying_writes_nothing_into_the_users_module_globals(user_module):
    pinned, clean = (
        user_module(
            f"""
            import torch

            CALLS = 0

            def entry(x):
                global CALLS
                CALLS += 1
                out = {make}
                out.copy_(x * 2)
                return out
            """
        )
        for make in ("torch.zeros(x.shape, device=x.device)", "x.new_zeros(x.shape)")
    )
    (fix,) = neurondev.explain(pinned.entry, torch.randn(4), run=False, quiet=True).fixes
    assert neurondev.explain(clean.entry, torch.randn(4), run=False, quiet=True).fixes == ()
    assert fix.verified
    assert pinned.CALLS == clean.CALLS  # verifying the fix ran the function, but never in the user's namespace


def test_verifying_rebinds_nothing_in_the_users_closure(user_module):
    module = user_module(
        """
        import torch

        def counted(make_buffer):
            calls = 0

            def entry(x):
                nonlocal calls
                calls += 1
                out = make_buffer(x)
                out.copy_(x * 2)
                return out

            return entry, lambda: calls

        pinned, pinned_calls = counted(lambda x: torch.zeros(x.shape, device=x.device))
        clean, clean_calls = counted(lambda x: x.new_zeros(x.shape))
        """
    )
    (fix,) = neurondev.explain(module.pinned, torch.randn(4), run=False, quiet=True).fixes
    assert neurondev.explain(module.clean, torch.randn(4), run=False, quiet=True).fixes == ()
    assert fix.verified and module.pinned_calls() == module.clean_calls()
