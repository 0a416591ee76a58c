"""`import neurondev` stays light, its public names are there, and no name hides a module."""

import importlib
import pkgutil
import subprocess
import sys
import types

import neurondev

HEAVY = ("graphviz", "torch_xla", "model_explorer", "playwright", "pandas", "ipywidgets", "libcst", "transformers")


def test_import_pulls_in_no_optional_dependency():
    code = f"import sys, neurondev; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_public_names_are_exported_verbs_first_then_records_then_errors():
    for name in neurondev.__all__:
        assert hasattr(neurondev, name), name
    names = neurondev.__all__
    assert names[0] == "explain" and names.index("Explanation") < names.index("NeurondevError")
    errors = names[names.index("NeurondevError") :]
    assert all(isinstance(getattr(neurondev, n), type) and issubclass(getattr(neurondev, n), Warning | Exception) for n in errors)


def test_the_readmes_modules_work_after_import_neurondev():
    assert neurondev.examples.get("seed").name == "seed"
    assert neurondev.widgets.Explorer.__name__ == "Explorer"
    assert callable(neurondev.xla.device)


def test_every_module_imports_as_a_module_and_no_public_name_hides_one():
    for info in pkgutil.walk_packages(neurondev.__path__, "neurondev."):
        if info.name == "neurondev.__main__":
            continue
        module = importlib.import_module(info.name)
        assert isinstance(module, types.ModuleType) and module.__doc__, f"{info.name} needs a one-line docstring"
        parent, _, leaf = info.name.rpartition(".")
        imported = __import__(info.name, fromlist=["_"])
        assert imported is module and getattr(sys.modules[parent], leaf) is module, f"{info.name} is hidden by a name"
        assert hasattr(module, "__all__") or info.ispkg, f"{info.name} has no __all__"
