"""The package's layers: read every module's imports with ast (those inside functions and TYPE_CHECKING
blocks too: an annotation is a dependency) and fail on a circle between modules or on an import from a
lower folder to a higher one; and its rooms: no module, Python or C++, over the limit."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "neurondev"
# Lowest first: a module may import its own folder and the folders before it (and the base modules).
ORDER = (
    "trace",
    "fx",
    "passes",
    "runs",
    "xla",
    "native",
    "devices",
    "loops",
    "report",
    "render",
    "notebook",
    "results",
    "integrations",
    "gallery",
    "cli",
)
BASE = (
    "neurondev.errors",
    "neurondev._compat",
    "neurondev._version",
    "neurondev._paths",
    "neurondev._build",
    "neurondev.site_url",
    "neurondev.rulebook",
)
TOP = ("neurondev", "neurondev.__main__", "neurondev.testing", "neurondev.examples", "neurondev.widgets", "neurondev.rule_runs")


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(("neurondev", *path.relative_to(PACKAGE).with_suffix("").parts))
        found[name.removesuffix(".__init__")] = path
    return found


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    """{module: the neurondev modules it imports, at run time or for its annotations}."""
    graph: dict[str, set[str]] = collections.defaultdict(set)
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("neurondev"):
                targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
                targets = [t for t in targets if t in known][:1] or [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names if alias.name.startswith("neurondev")]
            else:
                continue
            for target in targets:
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target != name and target in known:
                    graph[name].add(target)
    return graph


def layer(name: str) -> int:
    """The position of a module's folder: base modules (and the modules of a base package) lowest, the package's top
    modules highest."""
    if name in BASE or name.rsplit(".", 1)[0] in BASE:
        return -1
    if name in TOP:
        return len(ORDER)
    return ORDER.index(name.split(".")[1])


def test_no_module_imports_a_higher_folder():
    known = modules()
    upward = sorted(f"{a} -> {b}" for a, targets in imports(known).items() for b in targets if layer(b) > layer(a))
    assert upward == []


def test_no_modules_import_each_other_in_a_circle():
    graph = imports(modules())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in list(graph):
        if module not in index:
            visit(module)
    assert circles == []


def test_every_folder_is_in_the_order():
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert folders - {base.split(".")[1] for base in BASE} == set(ORDER)


LIMIT = 400  # lines: past it a module is split where its concern splits (docs/architecture.md, "The rooms")


def test_no_module_python_or_cpp_is_over_the_limit():
    sources = [path for path in PACKAGE.rglob("*") if path.suffix in (".py", ".cpp", ".h")]
    over = {str(path.relative_to(PACKAGE)): n for path in sources if (n := len(path.read_text().splitlines())) > LIMIT}
    assert len(sources) > 150 and over == {}


def test_no_two_modules_share_a_name():
    names = collections.Counter(path.stem for path in PACKAGE.rglob("*.py") if path.stem != "__init__")
    assert [name for name, count in names.items() if count > 1] == []
