"""The cards' look: the CSS every card shares (notebook themes, light and dark), the one HTML escape, and a line or a
dash."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from neurondev.trace.source import SourceLine

if TYPE_CHECKING:
    pass

__all__ = ["CSS", "REPORT_CSS", "escape", "where_or_dash"]


CSS = """
.neurondev-card { --nd-fg: var(--jp-ui-font-color1, #1f2328); --nd-muted: var(--jp-ui-font-color2, #59636e);
  --nd-bg: var(--jp-layout-color1, #ffffff); --nd-alt: var(--jp-layout-color2, #f6f8fa);
  --nd-border: var(--jp-border-color2, #d0d7de); --nd-bad: var(--jp-error-color1, #c62828);
  --nd-good: var(--jp-success-color1, #2e7d32); --nd-warn: var(--jp-warn-color1, #b26a00);
  --nd-mono: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, monospace);
  font-family: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", sans-serif);
  color: var(--nd-fg); background: var(--nd-bg); border: 1px solid var(--nd-border); border-radius: 6px;
  padding: 12px 16px; line-height: 1.45; font-size: 13px; max-width: 100%; overflow-x: auto; }
.neurondev-card h3 { margin: 0 0 6px; font-size: 16px; }
.neurondev-card h4 { margin: 16px 0 6px; font-size: 14px; border-bottom: 1px solid var(--nd-border); }
.neurondev-card .nd-headline, .neurondev-card .nd-program-line { font-size: 14px; margin: 4px 0; }
.neurondev-card .nd-bad { color: var(--nd-bad); font-weight: 600; }
.neurondev-card .nd-good { color: var(--nd-good); font-weight: 600; }
.neurondev-card .nd-muted, .neurondev-card .nd-note { color: var(--nd-muted); }
.neurondev-card table { border-collapse: collapse; margin: 6px 0; }
.neurondev-card table th, .neurondev-card table td { border: 1px solid var(--nd-border); padding: 3px 8px; text-align: left !important; vertical-align: top; }
.neurondev-card table th { background: var(--nd-alt); }
.neurondev-card code, .neurondev-card pre { font-family: var(--nd-mono); font-size: 12px; }
.neurondev-card pre { background: var(--nd-alt); padding: 6px 8px; border-radius: 4px; overflow-x: auto; }
.neurondev-card .nd-graphs { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.neurondev-card figure { margin: 0; flex: 1 1 320px; min-width: 280px; background: #ffffff; border-radius: 4px; padding: 4px; }
.neurondev-card figure svg { max-width: 100%; height: auto; }
.neurondev-card figcaption { color: #59636e; font-size: 12px; }
.neurondev-card .nd-del { background: rgba(214, 39, 40, 0.15); display: block; }
.neurondev-card .nd-add { background: rgba(46, 125, 50, 0.18); display: block; }
.neurondev-card .nd-card-fix { margin: 6px 0 10px; max-width: 100%; }
.neurondev-card pre.nd-fixdiff { white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0; }
.neurondev-card .nd-why summary { cursor: pointer; color: var(--nd-muted); font-size: 12px; }
"""

REPORT_CSS = """
@media (prefers-color-scheme: dark) { body { background: #0d1117; }
  .neurondev-card { --nd-fg: #e6edf3; --nd-muted: #9198a1; --nd-bg: #0d1117; --nd-alt: #161b22; --nd-border: #3d444d;
    --nd-bad: #ff7b72; --nd-good: #3fb950; } }
body { margin: 24px; }
"""


def escape(value: Any) -> str:
    """Text for HTML (None as nothing): the one escape every card and the explorer use."""
    return html.escape("" if value is None else str(value))


def where_or_dash(source: SourceLine | None) -> str:
    """'model.py:12' for a source line, a dash for none."""
    return source.where if source is not None else "—"
