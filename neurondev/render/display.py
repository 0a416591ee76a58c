"""What an Explanation and a Watch show: text, the card, the report page, JSON, DOT, SVG and Model Explorer files.

Each class adds display methods to a data class below it (``ExplanationData``, ``WatchData``) and calls
the renderers of this folder directly; ``neurondev.notebook.interactive`` adds the widgets on top, and
``neurondev.results`` names the public classes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neurondev._paths import output_file, output_folder
from neurondev.loops.result import WatchData
from neurondev.render.drawing import dot_of
from neurondev.render.fix_words import fallback_advice
from neurondev.render.html import card, report
from neurondev.render.json import explanation_dict, plain, watch_dict
from neurondev.render.text import summary as explanation_summary
from neurondev.render.watch import watch_card, watch_report, watch_summary
from neurondev.report.model import ExplanationData, SectionKey

if TYPE_CHECKING:
    from neurondev.render.model_explorer import ModelExplorerFiles

__all__ = ["ExplanationDisplay", "WatchDisplay"]


class ExplanationDisplay(ExplanationData):
    """An Explanation's displays: ``summary()``, ``fallback_table()``, the card (``_repr_html_``), ``save_html``, ``to_dict``/``to_json``,
    ``to_dot``/``svg``/``save_svg`` and ``save_model_explorer``; each computed from the data when asked."""

    def summary(self) -> str:
        """The findings in a few sentences, for a terminal."""
        return explanation_summary(self)

    def fallback_table(self) -> Any:
        """A pandas.DataFrame, one row per op that fell back to the CPU and line: op (as the device ran it), the op
        the program called when it fell back beneath it (``inside``: ``aten::embedding`` for ``aten::index_select``),
        calls, bytes copied (per call), file, line, code, module, the scenario and what to write instead (where the
        program causes it)."""
        import pandas

        rows = [
            {
                "op": fallback.op,
                "inside": fallback.inside,
                "calls": fallback.calls,
                "bytes_copied": fallback.bytes,
                "file": fallback.file,
                "line": fallback.line,
                "code": fallback.code,
                "module": fallback.module,
                "scenario": scenario,
                "instead": fallback_advice(fallback.op),
            }
            for scenario, fallback in self.fallbacks
        ]
        columns = ["op", "inside", "calls", "bytes_copied", "file", "line", "code", "module", "scenario", "instead"]
        return pandas.DataFrame(rows, columns=columns)

    def _repr_html_(self) -> str:
        return card(self)

    def save_html(self, path: str | Path) -> Path:
        """Write the self-contained report (inline SVG and CSS, no script, nothing from the network)."""
        path = output_file(path, what="save_html's path", example="report.html")
        path.write_text(report(self), encoding="utf-8")
        return path

    def to_dict(self) -> dict[str, Any]:
        """Plain data (str, int, float, bool, None, lists and dicts) of everything found."""
        return explanation_dict(self)

    def to_json(self, **options: Any) -> str:
        """Strict JSON (no NaN or Infinity literals): what ``to_dict()`` holds."""
        return json.dumps(self.to_dict(), indent=options.pop("indent", 2), allow_nan=False, **options)

    def to_dot(self, which: str = "before", section: int | SectionKey = 0, *, full: bool = False, radius: int = 2) -> str:
        """DOT text of one section's graph ``before`` (pins marked) or ``after`` the pass (rewrites marked)."""
        return dot_of(self, which, section, full=full, radius=radius)

    def svg(self, which: str = "before", section: int | SectionKey = 0, *, full: bool = False, radius: int = 2) -> str:
        """SVG text of one section's graph; DotUnavailableError without a dot program."""
        from neurondev.render.svg import render_svg

        return render_svg(self.to_dot(which, section, full=full, radius=radius))

    def save_svg(self, path: str | Path, which: str = "before", section: int | SectionKey = 0, **options: Any) -> Path:
        path = output_file(path, what="save_svg's path", example="graph.svg")
        path.write_text(self.svg(which, section, **options), encoding="utf-8")
        return path

    def save_model_explorer(self, folder: str | Path) -> ModelExplorerFiles:
        """Write the graphs before and after the pass, and the overlays (pins, breaks, crossings, uploads,
        fallbacks, devices, where the device first differs), as Model Explorer files into ``folder``; needs ``neurondev[explorer]``."""
        from neurondev.render.model_explorer import save_model_explorer

        return save_model_explorer(self, output_folder(folder, what="save_model_explorer's folder", example="me/"))


class WatchDisplay(WatchData):
    """A Watch's displays: ``summary()``, the card (``_repr_html_``), ``save_html``, ``to_dict``/``to_json``."""

    def summary(self) -> str:
        """What compiled, why, whether the loop reached a steady state, and the advice, in a few sentences."""
        return watch_summary(self.record)

    def _repr_html_(self) -> str:
        return watch_card(self.record)

    def save_html(self, path: str | Path) -> Path:
        """Write the card as one self-contained page (inline SVG, no script)."""
        path = output_file(path, what="save_html's path", example="watch.html")
        path.write_text(watch_report(self.record), encoding="utf-8")
        return path

    def save_trace(self, path: str | Path) -> Path:
        """Write the loop as a Chrome trace-event file (Perfetto, chrome://tracing, TensorBoard's trace viewer, Holistic
        Trace Analysis): the steps, dynamo's compiles and torch_xla's timed compiles, executions and transfers, each a
        slice at the moment the runtime's clock gave it, named with its rule, cause and line."""
        from neurondev.render.trace_events import trace_events

        path = output_file(path, what="save_trace's path", example="trace.json")
        path.write_text(json.dumps(plain(trace_events(self.record)), allow_nan=False), encoding="utf-8")
        return path

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``compiles``, ``steps`` and ``calls`` (rows as the tables have them), ``steady_state``,
        ``advice`` ([{cause, text, file, line, code, where}]), ``costs`` (seconds per line and cause, the runtime's
        clocks), ``summary``, the notes, ``raised``, ``seconds``."""
        return plain(watch_dict(self.record))

    def to_json(self, **options: Any) -> str:
        return json.dumps(self.to_dict(), indent=options.pop("indent", 2), allow_nan=False, **options)
