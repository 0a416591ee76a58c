"""`import neurondev` stays light: no graphviz, pandas, ipywidgets or torch_xla until they are used."""

import subprocess
import sys

HEAVY = ("graphviz", "pandas", "ipywidgets", "torch_xla")


def test_import_pulls_in_no_optional_dependency():
    code = f"import sys, neurondev; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_public_names_are_exported():
    import neurondev

    for name in ("capture", "diagnose", "DeviceRewriterPass", "Capture", "DevicePin", "explain", "Explanation",
                 "run_on_xla", "compare_traces", "check", "DevicePinsError", "NeurondevError"):
        assert name in neurondev.__all__
        assert hasattr(neurondev, name)
