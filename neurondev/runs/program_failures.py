"""Where and why the user's program failed on the device: the stage (compiling, a compiled graph, the code between
graphs), the user's line, one of the failure kinds (mixed devices, a default device torch.compile ignored, a host-only
call between graphs, a wrong device at run time, other) and the error's own words."""

from __future__ import annotations

import re

import torch
import torch.fx

from neurondev._compat.dynamo import dynamo_failure
from neurondev.runs.program_records import ProgramFailure
from neurondev.trace.source import SourceLine, user_line_of_error

__all__ = ["HOST_ONLY_CODE", "default_device_set", "failure_kind", "from_dynamo", "line_in_message", "locate_failure", "message_of"]

_MIXED = re.compile(
    r"two different devices|FakeTensor Device Propagation|found at least two devices|not on the expected device|device mismatch", re.I
)
_HOST_ONLY_MESSAGE = re.compile(r"numpy|0-dimensional arrays|python scalars|can't convert xla", re.I)
HOST_ONLY_CODE = re.compile(r"\.(numpy|tolist)\(|\bnp\.")
_WRAPPED = re.compile(r"got \w+\((?P<quote>['\"])(?P<message>.+)(?P=quote)\)")
_WRONG_DEVICE = re.compile(r"Expected XLA tensor|XLA tensors|same device|Expected all tensors", re.I)


def locate_failure(error: BaseException, *, call: int = 1) -> ProgramFailure:
    """A failure raised outside any compiled graph (while dynamo traced, or in the code between
    graphs) as a located record: the user's line and its kind."""
    stage = "compile" if from_dynamo(error) else "python"
    source = user_line_of_error(error)
    return ProgramFailure(failure_kind(error, stage, source), stage, type(error).__name__, message_of(error), source, None, call)


def message_of(error: BaseException) -> str:
    """The error's own words: its first line, or the error dynamo wrapped ("... got RuntimeError('X')": X)."""
    first = (str(error).strip().splitlines() or [""])[0]
    wrapped = _WRAPPED.search(first)
    return (wrapped["message"] if wrapped else first)[:300]


def line_in_message(error: BaseException) -> SourceLine | None:
    """The user's line an error's own text names (torch.fx adds the failing node's stack trace to it)."""
    return user_line_of_error(error) if "Original traceback:" in str(error) else None


def from_dynamo(error: BaseException) -> bool:
    """Raised while dynamo traced or compiled a frame (not by the user's code running)."""
    return dynamo_failure(error)


def failure_kind(error: BaseException, stage: str, source: SourceLine | None) -> str:
    text = _messages(error)
    if _MIXED.search(text) and stage == "compile" and default_device_set():
        return "default device ignored under torch.compile"  # PyTorch issue 175953: a factory call left on the CPU
    if _MIXED.search(text):
        return "mixed devices at compile time" if stage == "compile" else "wrong device at run time"
    if HOST_ONLY_CODE.search(source.code if source else "") or _HOST_ONLY_MESSAGE.search(text):
        return "host-only call between graphs"
    if _WRONG_DEVICE.search(text):
        return "wrong device at run time"
    return "other"


def default_device_set() -> bool:
    """A default device other than the CPU is set (``torch.set_default_device``, ``with torch.device(...)``): a
    torch.compile that does not apply it to every factory call (PyTorch issue 175953) fails only in the program's run."""
    return torch.get_default_device().type != "cpu"


def _messages(error: BaseException) -> str:
    """The messages of an error and of the errors it was raised from."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(str(current))
        current = current.__cause__ or current.__context__
    return "\n".join(parts)
