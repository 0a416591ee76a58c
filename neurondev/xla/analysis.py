"""torch_xla's own analysis of each XLA compile and execution (``PT_XLA_DEBUG_LEVEL=2``), read back as records.

torch_xla 2.9 (``csrc/debug_util.cpp``, at debug level 2) writes, for every program it compiles and
every execution, why (``Compilation Cause``: a host read of a lazy value, a user ``torch_xla.sync()``,
dynamo compiling or running a graph, the bridge syncing a graph's lazy inputs), the graph's hash and
numbers of inputs and outputs, and the Python frames that triggered it (innermost first). It reads the
level once per process, at its first analysis: it can be turned on before the process compiles
anything XLA (``neurondev watch`` does, for the script it runs), never after. With
``PT_XLA_DEBUG_FILE`` the analysis is appended to that file, which this module reads from an offset.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path

from neurondev.trace.source import in_neurondev

__all__ = ["CAUSES", "Analysis", "AnalysisLog", "enable", "open_log", "parse", "status"]

LEVEL, FILE, FRAMES = "PT_XLA_DEBUG_LEVEL", "PT_XLA_DEBUG_FILE", "PT_XLA_DEBUG_MAX_FRAME"

# torch_xla's words for a cause -> neurondev's kind of cause
CAUSES = {
    "user code trying to access tensor value": "host read",
    "user torch_xla.sync": "user sync",
    "user mark_step": "user sync",
    "when dynamo processing input graphs": "input sync",
    "trying to access tensor value": "host read",
    "dynamo is compiling a fx graph": "dynamo graph",
    "dynamo is executing a compiled program": "dynamo graph",
}
_BRIDGE = "torch_xla/_dynamo/dynamo_bridge.py"
_BLOCK = re.compile(r"^(?P<phase>Compilation|Execution) Analysis: =+\n(?P<body>.*?)^(?P=phase) Analysis: =+$", re.M | re.S)
_FRAME = re.compile(r"^\s*(?P<function>\S.*?) \((?P<file>.+):(?P<line>\d+)\)\s*$")


@dataclasses.dataclass(frozen=True)
class Analysis:
    """One compile (``phase`` 'compilation') or execution of an XLA program as torch_xla analysed it: its
    cause in torch_xla's words and as a kind (one of ``CAUSES``' values, or 'other'), the graph's hash, its
    numbers of inputs and outputs, and the Python frames that triggered it (innermost first: file, line, function)."""

    phase: str
    cause: str
    kind: str
    graph_hash: str
    inputs: int | None
    outputs: int | None
    frames: tuple[tuple[str, int, str], ...]


def parse(text: str) -> list[Analysis]:
    """Every analysis block in ``text``, in order."""
    return [_analysis(match["phase"].lower(), match["body"]) for match in _BLOCK.finditer(text)]


def _analysis(phase: str, body: str) -> Analysis:
    lines = [line.split(":", 1)[1] if ":" in line else line for line in body.splitlines()]
    cause = _after(lines, "Cause").strip()
    frames = tuple(
        (m["file"], int(m["line"]), m["function"]) for m in (_FRAME.match(line) for line in _section(lines, "Python Frame")) if m
    )
    kind = next((kind for words, kind in CAUSES.items() if words in cause.lower()), "other")
    if kind == "host read" and frames and frames[0][0].replace("\\", "/").endswith(_BRIDGE):
        kind = "input sync"  # torch_xla names it a host read, but its dynamo bridge is materialising a graph's lazy inputs
    caller = _sync_caller(frames)
    if caller is not None and kind in ("user sync", "host read"):
        kind = _sync_kind(caller)  # torch_xla says "user" of any sync: whose it was is the frame that called it
    frames = tuple(frame for frame in frames if not in_neurondev(frame[0]))
    return Analysis(
        phase="compilation" if phase.startswith("comp") else "execution",
        cause=cause,
        kind=kind,
        graph_hash=_field(lines, "Graph Hash") or "",
        inputs=_number(_field(lines, "Number of Graph Inputs")),
        outputs=_number(_field(lines, "Number of Graph Outputs")),
        frames=frames,
    )


_SYNCS = (("torch_xla/torch_xla.py", "sync"), ("torch_xla/core/xla_model.py", "mark_step"))


def _is_user_sync(file: str, function: str) -> bool:
    path = file.replace("\\", "/")
    return any(path.endswith(where) and function == name for where, name in _SYNCS)


def _sync_caller(frames: tuple[tuple[str, int, str], ...]) -> str | None:
    """The file of the frame that called torch_xla's sync (``torch_xla.sync()``, ``xm.mark_step()``), past torch_xla's
    own wrappers of it (its deprecation decorator); None when no sync is among the frames (innermost first)."""
    at = next((i for i, (file, _, function) in enumerate(frames) if _is_user_sync(file, function)), None)
    if at is None:
        return None
    for file, _, _ in frames[at + 1 :]:
        path = file.replace("\\", "/")
        if "torch_xla/" not in path or "torch_xla/_dynamo/" in path:
            return path
    return None


def _sync_kind(caller: str) -> str:
    """Whose sync it was: torch_xla's dynamo bridge syncing a graph's lazy inputs, neurondev's step marker (the sync
    advice applied), or the program's own call (yours, or a library's you call)."""
    if "torch_xla/_dynamo/" in caller:
        return "bridge sync"
    if in_neurondev(caller):
        return "neurondev sync"
    return "user sync"


def _after(lines: list[str], heading: str) -> str:
    for index, line in enumerate(lines):
        if line.strip().endswith(heading) and index + 1 < len(lines):
            return lines[index + 1]
    return ""


def _section(lines: list[str], heading: str) -> list[str]:
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(heading)), None)
    if start is None:
        return []
    found = []
    for line in lines[start + 1 :]:
        if line.strip().startswith("---") or not line.startswith("  "):
            break
        found.append(line)
    return found


def _field(lines: list[str], name: str) -> str | None:
    for line in lines:
        if line.strip().startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    return None


def _number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def status() -> tuple[bool, str, str | None]:
    """Whether torch_xla's analysis can be read in this process: (on, state, level), state being 'on',
    'to stderr' (on, without PT_XLA_DEBUG_FILE) or 'off', level the PT_XLA_DEBUG_LEVEL set."""
    level, path = os.environ.get(LEVEL), os.environ.get(FILE)
    if level and int(level) >= 2 and path:
        return True, "on", level
    if level and int(level) >= 2:
        return False, "to stderr", level
    return False, "off", level


def enable(path: str | Path | None = None) -> bool:
    """Turn torch_xla's analysis on into ``path``, when this process has not compiled anything on XLA yet
    (the level is read once, at the first analysis) and the user set neither variable; True when it is on.
    Without ``path``, into a folder of neurondev's own, made only then and removed when Python exits."""
    if os.environ.get(LEVEL) or os.environ.get(FILE):
        return status()[0]
    if _compiled_on_xla():
        return False
    if path is None:
        from neurondev._paths import scratch_folder

        path = scratch_folder("neurondev-watch-") / "xla-analysis.txt"
    os.environ[LEVEL], os.environ[FILE] = "2", str(path)
    os.environ.setdefault(FRAMES, "64")  # torch_xla keeps few frames by default: too few to reach the user's line
    return True


def _compiled_on_xla() -> bool:
    """Whether this process has compiled an XLA program (then torch_xla has read the analysis level already)."""
    if "torch_xla" not in sys.modules:
        return False
    from neurondev.xla.counters import counts

    return counts().compilations > 0


class AnalysisLog:
    """torch_xla's analysis file, read by byte offsets: ``size()`` marks a moment, ``between(a, b)`` the
    records written between two marks (a block still being written at ``b`` is left to the next reader)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def size(self) -> int:
        return self.path.stat().st_size if self.path.is_file() else 0

    def between(self, start: int, end: int) -> list[Analysis]:
        if end <= start or not self.path.is_file():
            return []
        with self.path.open("rb") as file:
            file.seek(start)
            text = file.read(end - start).decode("utf-8", errors="replace")
        return parse(text)


def open_log() -> AnalysisLog | None:
    """The analysis file torch_xla writes in this process, when its analysis is on and goes to a file."""
    on = status()[0]
    return AnalysisLog(os.environ[FILE]) if on else None
