"""Where a run stands in the loop: the graph (as Graphviz DOT) and the loop's own source, highlighted.

Pure functions of a Run, no Streamlit, so they are tested directly.
"""

from __future__ import annotations

import base64
import html
import inspect
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolMessage
from agentcore.run import Run

Node = Literal["prompt", "model", "tools", "done"]

ACCENT = "#3b5bdb"
ERROR = "#e03131"
DONE = "#2f9e44"
LINE_NUMBER = "#4f565d"  # 5.8:1 on a highlighted line's #dbe4ff, 7.2:1 on the code's #f8f9fa (WCAG AA: 4.5:1)


@dataclass(frozen=True)
class Position:
    """The node a run is at, the edge it took to get there, and whether the last call failed."""

    node: Node
    edge: tuple[Node, Node] | None
    error: bool = False
    last_phase: Literal["model", "tools"] | None = None


def position(run: Run | None) -> Position:
    """Derive the run's place in the loop from its messages and stop reason alone.

    A run that stopped is done, whatever stopped it: an answer, the step budget, a failed model call
    (drawn as a failure, the call that failed on the model node) or a Stop, which takes no edge of the
    loop. Stepping it again moves it on.
    """
    if run is None or not run.messages:
        return Position("prompt", None)
    last = run.messages[-1]
    if isinstance(last, ToolMessage):
        came_from: Node = "tools"
    elif isinstance(last, AssistantMessage):
        came_from = "model"
    else:
        came_from = "prompt"
    last_phase = came_from if came_from != "prompt" else None
    if run.stop_reason == "error":
        return Position("done", (came_from, "model") if came_from != "model" else None, True, last_phase)
    if run.stop_reason == "cancelled" and not run.finished:
        return Position("done", None, False, last_phase)
    if run.finished:
        return Position("done", (came_from, "done"), False, last_phase)
    target: Node = run.next_phase  # type: ignore[assignment]
    return Position(target, (came_from, target), False, last_phase)


_EDGES: tuple[tuple[Node, Node, str], ...] = (
    ("prompt", "model", ""),
    ("model", "tools", "tool calls"),
    ("tools", "model", "results"),
    ("model", "done", "answer"),
    ("tools", "done", "budget or\nstructured answer"),
)


def _dot_text(text: str) -> str:
    """Text for inside a quoted DOT label: its quotes and backslashes cannot end the label or start an escape."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _node_labels(run: Run | None, pos: Position) -> dict[Node, str]:
    """Each node's words, one line a line: the step count on the model phase, the stop reason on done."""
    steps = len(run.steps) if run else 0
    budget = run.config.max_steps if run else 0
    labels: dict[Node, str] = {
        "prompt": "user prompt",
        # the budget is the most steps the run may take, not how many it will: a two-step lesson has a budget of 4
        "model": f"model phase\ncall the model\n(step {steps}, at most {budget})"
        if run
        else "model phase\ncall the model",
        "tools": "tools phase\nrun the tool calls",
        "done": f"done\n{run.stop_reason}" if run and pos.node == "done" and run.stop_reason else "done",
    }
    if pos.error and run is not None:
        labels["model"] = "model phase\nthe call failed"
    return labels


def loop_dot(run: Run | None) -> str:
    """The loop as a Graphviz graph, with the current node and the edge just taken highlighted."""
    pos = position(run)
    labels = {node: _dot_text(label).replace("\n", "\\n") for node, label in _node_labels(run, pos).items()}
    lines = [
        "digraph loop {",
        '  rankdir=TB; bgcolor="transparent"; pad=0.2; nodesep=0.9; ranksep=0.45;',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=12,'
        ' fillcolor="#f1f3f5", color="#ced4da", fontcolor="#343a40", margin="0.2,0.1"];',
        '  edge [color="#adb5bd", fontname="Helvetica", fontsize=10, fontcolor="#868e96", arrowsize=0.7];',
    ]
    for node, label in labels.items():
        attrs = [f'label="{label}"']
        if node == "prompt":
            attrs.append("shape=note")
        if node == "done":
            attrs.append("shape=doublecircle" if pos.node == "done" else "shape=circle")
        if node == pos.node:
            colour = ERROR if pos.error else (DONE if node == "done" else ACCENT)
            attrs += [f'fillcolor="{colour}"', f'color="{colour}"', 'fontcolor="white"', "penwidth=2"]
        lines.append(f"  {node} [{', '.join(attrs)}];")
    for src, dst, label in _EDGES:
        attrs = [f'label="{label}"'] if label else []
        if pos.edge == (src, dst):
            attrs += [f'color="{ACCENT}"', "penwidth=2.5", f'fontcolor="{ACCENT}"']
        if (src, dst) in (("tools", "model"), ("tools", "done")):
            attrs.append("constraint=false")
        lines.append(f"  {src} -> {dst} [{', '.join(attrs)}];")
    lines.append("  { rank=same; model; tools; }")
    lines.append("}")
    return "\n".join(lines)


# -- the same graph as a fixed SVG drawing ----------------------------------------------

# node boxes (x, y, width, height) on a 420 x 290 canvas; the loop has four nodes, so they are placed by hand
_BOXES: dict[Node, tuple[int, int, int, int]] = {
    "prompt": (70, 8, 110, 32),
    "model": (45, 86, 160, 62),
    "tools": (262, 92, 140, 50),
}
_DONE_AT, _DONE_R = (125, 248), 30
# each edge: its SVG path, where its label goes, and the label's anchor
_PATHS: dict[tuple[Node, Node], tuple[str, tuple[int, int], str]] = {
    ("prompt", "model"): ("M125,40 L125,83", (0, 0), "middle"),
    ("model", "tools"): ("M205,104 Q233,92 259,104", (233, 88), "middle"),
    ("tools", "model"): ("M262,130 Q233,144 208,132", (233, 156), "middle"),
    ("model", "done"): ("M125,148 L125,215", (133, 186), "start"),
    ("tools", "done"): ("M320,142 L152,234", (262, 200), "start"),
}
_EDGE_LABELS = {(src, dst): label for src, dst, label in _EDGES}
_GREY_EDGE, _GREY_TEXT = "#adb5bd", "#868e96"


def _svg_lines(text: str, x: int, y: int, size: int, colour: str, anchor: str = "middle") -> str:
    """Lines of text centred on (x, y), escaped for the SVG."""
    lines = text.split("\n")
    top = y - (len(lines) - 1) * (size + 2) / 2
    spans = "".join(
        f'<tspan x="{x}" y="{top + k * (size + 2):.0f}">{html.escape(line)}</tspan>' for k, line in enumerate(lines)
    )
    return f'<text text-anchor="{anchor}" dominant-baseline="middle" font-size="{size}" fill="{colour}">{spans}</text>'


def loop_svg(run: Run | None) -> str:
    """The loop as the graph of loop_dot, drawn as a fixed SVG: nothing to lay out or animate in the browser."""
    pos = position(run)
    labels = _node_labels(run, pos)
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 420 290" width="420" height="290"'
        ' font-family="Helvetica, Arial, sans-serif" role="img" aria-label="the agent loop">',
        "<defs>",
        *(
            f'<marker id="ac-arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7"'
            f' orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
            for name, colour in (("grey", _GREY_EDGE), ("accent", ACCENT))
        ),
        "</defs>",
    ]
    for (src, dst), (path, (lx, ly), anchor) in _PATHS.items():
        taken = pos.edge == (src, dst)
        colour, width = (ACCENT, 2.5) if taken else (_GREY_EDGE, 1.2)
        parts.append(
            f'<path class="ac-edge{" ac-taken" if taken else ""}" data-edge="{src}-{dst}" d="{path}" fill="none"'
            f' stroke="{colour}" stroke-width="{width}" marker-end="url(#ac-arrow-{"accent" if taken else "grey"})"/>'
        )
        label = _EDGE_LABELS[(src, dst)]
        if label:
            parts.append(_svg_lines(label, lx, ly, 10, ACCENT if taken else _GREY_TEXT, anchor))
    for node in ("prompt", "model", "tools", "done"):
        current = node == pos.node
        fill = (ERROR if pos.error else (DONE if node == "done" else ACCENT)) if current else "#f1f3f5"
        stroke, ink = (fill, "white") if current else ("#ced4da", "#343a40")
        attrs = f'class="ac-node{" ac-current" if current else ""}" data-node="{node}"'
        if node == "done":
            cx, cy = _DONE_AT
            ring = (
                f'<circle cx="{cx}" cy="{cy}" r="{_DONE_R - 4}" fill="none" stroke="{ink}" stroke-width="1"/>'
                if current
                else ""
            )
            parts.append(
                f'<g {attrs}><circle cx="{cx}" cy="{cy}" r="{_DONE_R}" fill="{fill}" stroke="{stroke}"'
                f' stroke-width="{2 if current else 1}"/>{ring}{_svg_lines(labels[node], cx, cy, 11, ink)}</g>'
            )
            continue
        x, y, w, h = _BOXES[node]
        parts.append(
            f'<g {attrs}><rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{4 if node == "prompt" else 9}"'
            f' fill="{fill}" stroke="{stroke}" stroke-width="{2 if current else 1}"/>'
            f"{_svg_lines(labels[node], x + w // 2, y + h // 2, 12, ink)}</g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def loop_html(run: Run | None) -> str:
    """loop_svg as an image for st.html, which keeps no inline SVG: a data address, fetched from nowhere."""
    data = base64.b64encode(loop_svg(run).encode()).decode()
    where = html.escape(position(run).node)
    return (
        f'<img class="ac-loop" data-node="{where}" alt="the agent loop, now at: {where}"'
        f' style="width:100%;max-width:460px" src="data:image/svg+xml;base64,{data}">'
    )


# -- the loop's source ----------------------------------------------------------------

_MARKERS = {
    "model": ("response = self._complete(", "self._record_step(", "run.append(message)"),
    "tools": ("self._execute(", "self._append_results("),
}
_STOP_MARKERS = {
    "answer": 'run.stop_reason = "answer"',
    "max_steps": 'run.stop_reason = "max_steps"',
    "structured": 'run.stop_reason = "structured"',
}
_ERROR_MARKERS = ("response = self._complete(", "return self._fail(")


@lru_cache(maxsize=2)
def phase_source(phase: Literal["model", "tools"]) -> tuple[tuple[str, ...], int]:
    """The source lines of Agent.model_phase or Agent.tools_phase, read at runtime, and the first line number."""
    fn = Agent.model_phase if phase == "model" else Agent.tools_phase
    lines, start = inspect.getsourcelines(fn)
    return tuple(textwrap.dedent("".join(lines)).splitlines()), start


@dataclass(frozen=True)
class SourceView:
    """Which phase's source to show, its lines, the first line number, and the highlighted line indexes."""

    phase: Literal["model", "tools"]
    lines: tuple[str, ...]
    first_line: int
    highlighted: frozenset[int]
    caption: str


def source_view(run: Run | None) -> SourceView:
    """The source of the phase that just ran, with the lines that did the work highlighted."""
    pos = position(run)
    phase = pos.last_phase or "model"
    lines, start = phase_source(phase)
    if pos.last_phase is None and not pos.error:
        return SourceView(phase, lines, start, frozenset(), "Agent.model_phase runs first: it sends the prompt.")
    markers = _ERROR_MARKERS if pos.error else _MARKERS[phase]
    wanted = list(markers)
    if run is not None and not pos.error and run.stop_reason in _STOP_MARKERS:
        wanted.append(_STOP_MARKERS[run.stop_reason])
    marked = frozenset(i for i, line in enumerate(lines) if any(m in line for m in wanted))
    if pos.error:
        caption = "Agent.model_phase: the provider call raised, so the run stopped with an error."
    elif phase == "model":
        caption = "Agent.model_phase just ran: the model was called and its reply appended."
    else:
        caption = "Agent.tools_phase just ran: each tool call ran and its result was appended."
    return SourceView(phase, lines, start, marked, caption)


def excerpt(view: SourceView, before: int = 5, after: int = 3) -> list[int | None]:
    """The line indexes worth showing: the signature, then the highlighted lines with some context; None is a gap."""
    if not view.highlighted:
        return list(range(min(len(view.lines), 14))) + ([None] if len(view.lines) > 14 else [])
    lo = max(1, min(view.highlighted) - before)
    hi = min(len(view.lines), max(view.highlighted) + after + 1)
    shown: list[int | None] = [0]
    if lo > 1:
        shown.append(None)
    shown += list(range(lo, hi))
    if hi < len(view.lines):
        shown.append(None)
    return shown


def source_html(view: SourceView, whole: bool = False) -> str:
    """The source as a numbered HTML block with the highlighted lines marked; an excerpt unless `whole`."""
    rows = []
    for i in range(len(view.lines)) if whole else excerpt(view):
        if i is None:
            rows.append('<div class="ac-line ac-gap"><span class="ac-no">⋮</span></div>')
            continue
        line = view.lines[i]
        cls = "ac-line ac-hl" if i in view.highlighted else "ac-line"
        rows.append(
            f'<div class="{cls}"><span class="ac-no">{view.first_line + i}</span>'
            f'<span class="ac-tx">{html.escape(line) or " "}</span></div>'
        )
    # a long line wraps under its own text, not under its number: nothing is cut off at the right edge
    style = (
        "<style>"
        ".ac-src{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;line-height:1.45;"
        "background:#f8f9fa;border:1px solid #e9ecef;border-radius:6px;padding:6px 0}"
        ".ac-line{display:flex;padding:0 10px 0 0}"
        f".ac-no{{flex:0 0 3.2em;color:{LINE_NUMBER};text-align:right;margin-right:12px;user-select:none}}"
        ".ac-line .ac-tx{white-space:pre-wrap;overflow-wrap:anywhere;min-width:0}"
        f".ac-hl{{background:#dbe4ff;box-shadow:inset 3px 0 0 {ACCENT}}}"
        f".ac-gap{{color:{LINE_NUMBER}}}"
        "</style>"
    )
    return f'{style}<div class="ac-src">{"".join(rows)}</div>'


# -- both phases of the newest step, for the lesson view ------------------------------------


def step_views(run: Run | None) -> list[SourceView]:
    """The source of each phase the newest step ran, model phase first, with the lines that did the work marked.

    A step that ended on an answer (or paused before its tools) ran only its model phase; a failed call
    shows the model phase's error lines.
    """
    if run is not None and run.stop_reason == "error":
        return [source_view(run)]
    if run is None or not run.steps:
        lines, start = phase_source("model")
        marked = frozenset(i for i, line in enumerate(lines) if any(m in line for m in _MARKERS["model"]))
        return [SourceView("model", lines, start, marked, "① Model phase runs first: these lines send the prompt.")]
    step = run.steps[-1]
    ran_tools = any(isinstance(m, ToolMessage) for m in run.messages[step.message_count :])
    stop = _STOP_MARKERS.get(run.stop_reason or "")
    views = []
    for phase in ("model", "tools") if ran_tools else ("model",):
        wanted = list(_MARKERS[phase])
        if stop is not None and (phase == "tools") == ran_tools:
            wanted.append(stop)  # the stop reason is set by the phase that ran last
        lines, start = phase_source(phase)
        marked = frozenset(i for i, line in enumerate(lines) if any(m in line for m in wanted))
        caption = (
            "① Model phase: the whole list went to the model; its reply was appended."
            if phase == "model"
            else "② Tools phase: each call ran; each result was appended in call order."
        )
        views.append(SourceView(phase, lines, start, marked, caption))
    return views


def key_lines(view: SourceView) -> list[int | None]:
    """The signature and the highlighted lines only (the first lines before a phase ran); None is a gap."""
    if not view.highlighted:
        return excerpt(view)
    shown: list[int | None] = [0]
    for i in sorted(view.highlighted):
        if shown[-1] is not None and i > shown[-1] + 1:
            shown.append(None)
        shown.append(i)
    return shown


def key_lines_html(view: SourceView, font_px: int = 16) -> str:
    """A phase's key lines, numbered, large and wrapped rather than cut off: code for a projector.

    Lines left out between two shown ones are marked by a dashed rule rather than a row of their own.
    """
    rows = []
    gap = False
    for i in key_lines(view):
        if i is None:
            gap = True
            continue
        cls = "ac-kl ac-hl" if i in view.highlighted else "ac-kl"
        cls += " ac-skip" if gap else ""
        gap = False
        rows.append(
            f'<div class="{cls}"><span class="ac-no">{view.first_line + i}</span>'
            f'<span class="ac-tx">{html.escape(view.lines[i].strip()) or " "}</span></div>'
        )
    style = (
        "<style>"
        f".ac-klsrc{{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:{font_px}px;"
        "line-height:1.35;background:#f8f9fa;border:1px solid #e9ecef;border-radius:6px;padding:4px 0}"
        ".ac-kl{display:flex;padding:1px 8px 1px 0}"
        f".ac-kl .ac-no{{flex:0 0 2.6em;color:{LINE_NUMBER};text-align:right;margin-right:10px;user-select:none}}"
        ".ac-kl .ac-tx{white-space:pre-wrap;overflow-wrap:anywhere;min-width:0}"
        f".ac-kl.ac-hl{{background:#dbe4ff;box-shadow:inset 3px 0 0 {ACCENT}}}"
        ".ac-kl.ac-skip{border-top:1px dashed #ced4da;margin-top:2px}"
        "</style>"
    )
    return f'{style}<div class="ac-klsrc">{"".join(rows)}</div>'
