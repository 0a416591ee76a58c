"""The ipywidgets explorer of an Explanation: pick a pin, see its line, node and journey; redraw; re-run."""

from __future__ import annotations

import html
from typing import Any

from neurondev._optional import require
from neurondev.trace.source import short_location

widgets = require("ipywidgets", purpose="Explanation.explore()")

__all__ = ["Explorer"]


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


class Explorer(widgets.VBox):
    """``ex.explore()``: a pin list (node, target, file:line), the selected pin's details, the graph
    before or after with a focus radius, the target device and a "Run on XLA" button."""

    def __init__(self, explanation: Any) -> None:
        from neurondev.report.explanation import Explanation
        from neurondev.errors import InvalidSubjectError

        if not isinstance(explanation, Explanation):
            raise InvalidSubjectError(
                f"Explorer explores an Explanation, got {type(explanation).__name__}; "
                "write neurondev.explain(fn, x).explore()"
            )
        self.explanation = explanation
        self.pins = widgets.Select(description="pins", layout=widgets.Layout(width="100%", height="120px"))
        self.detail = widgets.HTML()
        self.which = widgets.ToggleButtons(options=["before", "after"], value="before", description="graph")
        self.radius = widgets.IntSlider(value=2, min=0, max=8, description="focus radius")
        self.target = widgets.Text(value=explanation.target, description="target")
        self.run_button = widgets.Button(description="Run on XLA", icon="play", button_style="primary")
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="", layout=widgets.Layout(visibility="hidden"))
        self.status = widgets.HTML()
        self.metrics = widgets.HTML()
        self.picture = widgets.HTML()
        controls = widgets.HBox([self.which, self.radius])
        running = widgets.HBox([self.target, self.run_button, self.progress])
        super().__init__([self.pins, self.detail, controls, self.picture, running, self.status, self.metrics])
        self.add_class("neurondev-explorer")
        self.pins.observe(lambda _: self._show_pin(), names="value")
        self.which.observe(lambda _: self._draw(), names="value")
        self.radius.observe(lambda _: self._draw(), names="value")
        self.run_button.on_click(lambda _: self.run())
        self._refresh()

    # --- what is shown -------------------------------------------------------------------------
    def _refresh(self) -> None:
        options = [(self._pin_label(pin), (pin.graph, n)) for pin, n in self._all_pins()]
        self.pins.options = options or [("no device pin: nothing to rewrite", None)]
        self.pins.value = options[0][1] if options else None
        self._show_pin()
        self._draw()
        self.metrics.value = self._metrics_html()

    def _all_pins(self) -> list[tuple[Any, int]]:
        return [(pin, n) for section in self.explanation.sections for n, pin in enumerate(section.pins)]

    @staticmethod
    def _pin_label(pin: Any) -> str:
        where = short_location(pin.file, pin.line)
        return f"{pin.node} · {pin.target} · {where}"

    def selected(self) -> Any:
        """The selected DevicePin, or None."""
        if self.pins.value is None:
            return None
        graph, n = self.pins.value
        return self.explanation.sections[graph].pins[n]

    def _show_pin(self) -> None:
        pin = self.selected()
        self.detail.value = "" if pin is None else self._pin_html(pin)
        self._draw()

    def _pin_html(self, pin: Any) -> str:
        from neurondev.report.advice import fix_for

        section = self.explanation.sections[pin.graph]
        before = _node(section.before, pin.node)
        after = _node(section.after, pin.node)
        where = f"{_e(pin.file)}:{_e(pin.line)}" if pin.file else "no source line"
        return (
            f'<div class="nd-pin-detail"><b>{_e(pin.node)}</b> ({_e(pin.target)}, {_e(pin.kind)}) at {where}'
            f"<pre class=\"nd-source\">{_e(pin.code)}</pre>"
            f"<div>users: {_e(', '.join(pin.users) or 'none')}</div>"
            f"<div>args before: <code>{_e(_call(before))}</code></div>"
            f"<div>args after: <code>{_e(_call(after))}</code></div>"
            f"<div>travelled: {_e(self._journey(section, pin.node))}</div>"
            f"<div>write instead: {_e(fix_for(pin))}</div></div>"
        )

    def _journey(self, section: Any, name: str) -> str:
        parts = []
        for label, record in (("before", section.run_before), ("after", section.run_after)):
            if record is None:
                continue
            crossings = [f"{c.source}→{c.node} {c.from_device}→{c.to_device}" for c in record.crossings if name in (c.source, c.node)]
            device = record.node_devices.get(name, "not reached" if record.error else "no tensor")
            parts.append(f"{label}: on {device}" + (f", crossing {'; '.join(crossings)}" if crossings else ""))
        return "; ".join(parts) or "not run"

    def _draw(self) -> None:
        from neurondev.render.graphs import svg_or_reason

        pin = self.selected()
        graph = pin.graph if pin is not None else 0
        if not self.explanation.sections:
            self.picture.value = "<p>No graph was recorded.</p>"
            return
        svg, reason = svg_or_reason(self.explanation, self.which.value, graph, radius=self.radius.value)
        self.picture.value = (
            f'<div class="nd-picture nd-{self.which.value}" style="max-width:100%;overflow:auto">{svg}</div>'
            if svg is not None else f"<p>Graph not drawn: {_e(reason)}</p>"
        )

    def _metrics_html(self) -> str:
        from neurondev.render.html import CSS, metrics_table

        ex = self.explanation
        body = "".join(f"<h4>{_e(s.label)}</h4>{metrics_table(s)}" for s in ex.sections if s.run_before or s.run_after)
        head = f"<p>{_e(ex.summary())}</p>"
        return f'<style>{CSS}</style><div class="neurondev-card">{head}{body}</div>'

    # --- actions -------------------------------------------------------------------------------
    def run(self) -> None:
        """Rewrite for the target in the text box and run both graphs again, with progress."""
        from neurondev.errors import NeurondevError

        self.progress.layout.visibility = "visible"
        self.progress.max, self.progress.value = max(2 * len(self.explanation.sections), 1), 0
        self.status.value = f"running on {_e(self.target.value)} ..."
        try:
            self.explanation.rerun(target=self.target.value, on_step=self._step)
        except NeurondevError as error:
            self.status.value = f'<span style="color:#c62828">{_e(error)}</span>'
        else:
            self.status.value = f"ran: {_e(self.explanation.skipped or 'both graphs, figures below')}"
        self.progress.layout.visibility = "hidden"
        self._refresh()

    def _step(self) -> None:
        self.progress.value += 1


def _node(gm: Any, name: str) -> Any:
    return next((node for node in gm.graph.nodes if node.name == name), None)


def _call(node: Any) -> str:
    if node is None:
        return "—"
    kwargs = ", ".join(f"{k}={v!r}" for k, v in node.kwargs.items())
    args = ", ".join(repr(a) if not hasattr(a, "name") else a.name for a in node.args)
    return f"{node.target if isinstance(node.target, str) else getattr(node.target, '__name__', node.target)}({', '.join(p for p in (args, kwargs) if p)})"
