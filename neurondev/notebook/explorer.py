"""The ipywidgets explorer of an Explanation: pick a pin, see its line, node and journey; redraw; re-run."""

from __future__ import annotations

import ipywidgets as widgets
import torch.fx

from neurondev.errors import InvalidSubjectError, NeurondevError
from neurondev.fx.pins import DevicePin
from neurondev.fx.subgraphs import node_named
from neurondev.render.card_style import escape as _e
from neurondev.render.fix_words import fix_for
from neurondev.render.sentences import skip_text, why_text
from neurondev.report.model import ExplanationData, Section

__all__ = ["Explorer"]


class Explorer(widgets.VBox):
    """``ex.explore()``: a pin list (node, function, file:line), the selected pin's details, the graph
    before or after with a focus radius, the target device and a "Run on XLA" button (on a native target, "Run on
    hostdev:0").

    ``explanation`` is the one shown; "Run on XLA" replaces it with ``explanation.rerun(target=...)``
    (a new Explanation: the one the user holds is not changed).
    """

    def __init__(self, explanation: ExplanationData) -> None:
        if not all(hasattr(explanation, name) for name in ("sections", "rerun", "fix_of")):  # what it reads, not what it is
            raise InvalidSubjectError(
                f"Explorer explores an Explanation, got {type(explanation).__name__}; write neurondev.explain(fn, x).explore()"
            )
        self.explanation = explanation
        self.pins = widgets.Select(description="pins", layout=widgets.Layout(width="100%", height="120px"))
        self.detail = widgets.HTML()
        self.which = widgets.ToggleButtons(options=["before", "after"], value="before", description="graph")
        self.radius = widgets.IntSlider(value=2, min=0, max=8, description="focus radius")
        self.target = widgets.Text(value=str(explanation.target), description="target")
        self.run_button = widgets.Button(description=f"Run on {explanation.place}", icon="play", button_style="primary")
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="", layout=widgets.Layout(visibility="hidden"))
        self.status = widgets.HTML()
        self.metrics = widgets.HTML()
        self.program = widgets.HTML()
        self.picture = widgets.HTML()
        controls = widgets.HBox([self.which, self.radius])
        running = widgets.HBox([self.target, self.run_button, self.progress])
        super().__init__([self.program, self.pins, self.detail, controls, self.picture, running, self.status, self.metrics])
        self.add_class("neurondev-explorer")
        self.pins.observe(lambda _: self._show_pin(), names="value")
        self.which.observe(lambda _: self._draw(), names="value")
        self.radius.observe(lambda _: self._draw(), names="value")
        self.run_button.on_click(lambda _: self.run())
        self._refresh()

    # --- what is shown -------------------------------------------------------------------------
    def _refresh(self) -> None:
        options = [
            (self._pin_label(pin), (position, n))
            for position, section in enumerate(self.explanation.sections)
            for n, pin in enumerate(section.pins)
        ]
        self.pins.options = options or [("no device pin: nothing to rewrite", None)]
        self.pins.value = options[0][1] if options else None
        self._show_pin()
        self.metrics.value = self._metrics_html()
        self.program.value = self._program_html()

    @staticmethod
    def _pin_label(pin: DevicePin) -> str:
        return f"{pin.node} · {pin.function} · {pin.where}"

    def selected(self) -> DevicePin | None:
        """The selected DevicePin, or None."""
        if self.pins.value is None:
            return None
        position, n = self.pins.value
        return self.explanation.sections[position].pins[n]

    def _selected_section(self) -> int:
        return self.pins.value[0] if self.pins.value is not None else 0

    def _show_pin(self) -> None:
        pin = self.selected()
        self.detail.value = "" if pin is None else self._pin_html(pin, self.explanation.sections[self._selected_section()])
        self._draw()

    def _pin_html(self, pin: DevicePin, section: Section) -> str:
        where = f"{_e(pin.file)}:{_e(pin.line)}" if pin.source else "no source line"
        return (
            f'<div class="nd-pin-detail"><b>{_e(pin.node)}</b> ({_e(pin.function)}, {_e(pin.kind)}) at {where}'
            f'<pre class="nd-source">{_e(pin.code)}</pre>'
            f"<div>users: {_e(', '.join(pin.users) or 'none')}</div>"
            f"<div>args before: <code>{_e(_call(_node(section.traced, pin.node)))}</code></div>"
            f"<div>args after: <code>{_e(_call(_node(section.rewritten, pin.node)))}</code></div>"
            f"<div>travelled: {_e(self._journey(section, pin.node))}</div>"
            f"{self._fix_html(pin)}</div>"
        )

    def _fix_html(self, pin: DevicePin) -> str:
        """The fixed statement of the pin's line with its verdict and a button that copies it; else the advice."""
        fix = self.explanation.fix_of(pin)
        if fix is None or fix.after is None:
            advice = fix_for(pin) if fix is None else f"no spelling: {why_text(fix)}"
            return f"<div>write instead: {_e(advice)}</div>"
        colour = "#2e7d32" if fix.verified else "#c62828"
        copy = "navigator.clipboard.writeText(this.dataset.fix).then(() => { this.textContent = 'Copied'; })"
        return (
            f'<div class="nd-fix"><div>write instead (<span style="color:{colour}">{_e(fix.status)}</span>):</div>'
            f'<pre class="nd-fixed">{_e(fix.after)}</pre>'
            f'<button class="nd-copy" data-fix="{_e(fix.after)}" onclick="{_e(copy)}">Copy the fix</button>'
            f'<div style="color:#59636e">{_e(why_text(fix))}</div></div>'
        )

    @staticmethod
    def _journey(section: Section, name: str) -> str:
        parts = []
        for label, record in (("before", section.before), ("after", section.after)):
            if record is None:
                continue
            crossings = [f"{c.source}→{c.node} {c.from_device}→{c.to_device}" for c in record.crossings if name in (c.source, c.node)]
            device = record.node_devices.get(name, "not reached" if record.error else "no tensor")
            parts.append(f"{label}: on {device}" + (f", crossing {'; '.join(crossings)}" if crossings else ""))
        return "; ".join(parts) or "not run"

    def _draw(self) -> None:
        from neurondev.render.drawing import svg_or_reason

        if not self.explanation.sections:
            self.picture.value = "<p>No graph was recorded.</p>"
            return
        svg, reason = svg_or_reason(
            self.explanation, self.which.value, self._selected_section(), radius=self.radius.value
        )  # its own budget
        if svg is None:
            self.picture.value = f"<p>Graph not drawn: {_e(reason)}</p>"
            return
        note = f"<p>Note: {_e(reason)}</p>" if reason else ""
        self.picture.value = f'<div class="nd-picture nd-{self.which.value}" style="max-width:100%;overflow:auto">{svg}</div>{note}'

    def _metrics_html(self) -> str:
        from neurondev.render.card_style import CSS
        from neurondev.render.html_runs import metrics_table
        from neurondev.render.text import summary

        ex = self.explanation
        body = "".join(f"<h4>{_e(s.label)}</h4>{metrics_table(s)}" for s in ex.sections if s.before or s.after)
        return f'<style>{CSS}</style><div class="neurondev-card"><p>{_e(summary(ex))}</p>{body}</div>'

    def _program_html(self) -> str:
        """Your program on the device, as written and rewritten (the runs explain made; the run button re-runs the graphs)."""
        from neurondev.render.card_style import CSS
        from neurondev.render.html_program import program_panel

        return f'<style>{CSS}</style><div class="neurondev-card nd-explorer-program">{program_panel(self.explanation)}</div>'

    # --- actions -------------------------------------------------------------------------------
    def run(self) -> None:
        """Rewrite for the target in the text box and run both graphs again, with progress."""
        self.progress.layout.visibility = "visible"
        self.progress.max, self.progress.value = max(2 * len(self.explanation.sections), 1), 0
        self.status.value = f"running on {_e(self.target.value)} ..."
        try:
            self.explanation = self.explanation.rerun(target=self.target.value, on_step=self._step)
        except NeurondevError as error:
            self.status.value = f'<span style="color:#c62828">{_e(error)}</span>'
        else:
            self.status.value = f"ran: {_e(skip_text(self.explanation.skipped) or 'both graphs, figures below')}"
            self.run_button.description = f"Run on {self.explanation.place}"
        self.progress.layout.visibility = "hidden"
        self._refresh()

    def _step(self) -> None:
        self.progress.value += 1


def _node(gm: torch.fx.GraphModule, name: str) -> torch.fx.Node | None:
    return node_named(gm, name)


def _call(node: torch.fx.Node | None) -> str:
    if node is None:
        return "—"
    kwargs = ", ".join(f"{k}={v!r}" for k, v in node.kwargs.items())
    args = ", ".join(a.name if isinstance(a, torch.fx.Node) else repr(a) for a in node.args)
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", node.target)
    return f"{target}({', '.join(p for p in (args, kwargs) if p)})"
