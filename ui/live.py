"""A phase that runs on its own thread while the page shows how it goes: the time so far and the streamed text.

The loop's thread writes what happens into a PhaseProgress through the loop's events; the page's
script thread reads it and draws it, twice a second or so, until the phase ends. Only the script
thread calls Streamlit. A phase whose script run is interrupted (a click elsewhere) goes on, and the
next script run follows it where the last one left off.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from agentcore.loop import Event
from agentcore.run import Run
from agentcore.steps import Phase

from . import safe

REDRAW_S = 0.25  # how often the page redraws a running phase; the page goes on at once when the phase ends
SHOWN_CHARS = 4000  # the end of a longer reply is shown as it streams: the whole of it is redrawn each time


@dataclass(frozen=True)
class Progress:
    """A running phase as the page shows it at one moment."""

    phase: Phase
    elapsed_s: float
    text: str  # the reply's text streamed so far in this model phase
    ahead: int  # calls waiting before this one for the embedded model
    tools: tuple[str, ...]  # the tools this tools phase started so far, in the order they started


class PhaseProgress:
    """What the running phase has done so far, from the loop's events; each new phase starts it afresh.

    An Observer for `Agent(observers=[...])`, written by the loop's thread and read by another.
    The time counts from the job's start until the phase changes, so a summary the context
    policies ask for before the model call counts in the model phase, as the person waits for it.
    """

    def __init__(self, phase: Phase = "model", clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._phase: Phase = phase
        self._started = clock()
        self._pieces: list[str] = []
        self._text = ""
        self._ahead = 0
        self._tools: list[str] = []

    def observe(self, event: Event) -> None:
        """Take one of the loop's events."""
        with self._lock:
            if event.kind == "phase_started" and event.phase is not None:
                if event.phase != self._phase:
                    self._phase, self._started = event.phase, self._clock()
                self._pieces, self._text, self._tools = [], "", []
            elif event.kind == "text_delta" and event.text:
                self._pieces.append(event.text)
            elif event.kind == "tool_started" and event.tool_call is not None:
                self._tools.append(event.tool_call.name)

    def on_wait(self, ahead: int) -> None:
        """How many calls are ahead of this one for the embedded model (agentcore's report_waits)."""
        with self._lock:
            self._ahead = ahead

    def now(self) -> Progress:
        """The phase as it stands."""
        with self._lock:
            if self._pieces:  # joined here, not at each delta: the page reads a few times a second
                self._text += "".join(self._pieces)
                self._pieces = []
            return Progress(self._phase, self._clock() - self._started, self._text, self._ahead, tuple(self._tools))


class PhaseJob:
    """One phase, or one step, of a run on its own thread; the page follows it, then finishes it."""

    def __init__(self, run: Run, drive: Callable[[], None], progress: PhaseProgress) -> None:
        self.run = run
        self.before = len(run.messages)  # what the phase appends is new from here on
        self.progress = progress
        self.failure: Exception | None = None  # what the phase raised, for the page to show once
        self.cancel = threading.Event()  # Stop: the model call ends at its next streamed piece, the tools do not run
        self._drive = drive
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._work, name="agentcore-phase", daemon=True)

    def start(self) -> None:
        """Start the phase on its thread."""
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds for the phase to end; True once it has."""
        return self._done.wait(timeout)

    def _work(self) -> None:
        try:
            self._drive()
        except Exception as exc:  # noqa: BLE001 - shown by the page, in the script thread that finishes the job
            self.failure = exc
        finally:
            self._done.set()


def show_progress(slot, progress: Progress) -> None:
    """Draw the running phase in `slot`: its name and time so far, then what streamed, or what it waits for."""
    with slot.container():
        line = f"**{progress.phase} phase** · {progress.elapsed_s:.1f} s"
        if progress.text:
            line += f" · {len(progress.text):,} characters"  # no provider reports its tokens before the end
        st.markdown(line)
        if progress.ahead:
            calls = "1 call" if progress.ahead == 1 else f"{progress.ahead} calls"
            st.caption(f":material/hourglass_top: Waiting for the embedded model: {calls} ahead")
        if progress.text:
            st.markdown(safe.markdown(streamed_tail(progress.text) + " ▌"))
        elif progress.phase == "tools":
            if progress.tools:
                st.caption("Running " + ", ".join(safe.code(name) for name in progress.tools))
        elif not progress.ahead:
            st.caption("Nothing streamed yet: a reply's text shows as it comes, a tool call once it is complete.")


def streamed_tail(text: str, most: int = SHOWN_CHARS) -> str:
    """The streamed text as the box shows it: whole, or its last `most` characters after an ellipsis."""
    return text if len(text) <= most else "…" + text[-most:]


def follow(job: PhaseJob, slot) -> None:
    """Redraw the job's progress in `slot` until the phase ends, and return as soon as it does."""
    show_progress(slot, job.progress.now())
    while not job.wait(REDRAW_S):
        show_progress(slot, job.progress.now())


# -- the keyboard's focus after a phase ---------------------------------------------------------------------------

# The control pressed to run a phase keeps the focus while it stays on the page and enabled, as Step does after a
# Step that leaves the run open. A Step that ends the run disables it, and the browser then drops the focus to the
# page's start; a Stop or a Retry is gone after its draw. The focus then goes to the first of these that is there and
# enabled: Step (it came back), the decision panel's Run, Retry, or New run, the next action of a run that ended.
NEXT_FOCUS = ("step", "run_tools", "retry", "go_on", "start")
PHASE_CONTROLS = (
    "step",
    "model_phase",
    "tools_phase",
    "run_to_end",
    "run_tools",
    "retry",
    "go_on",
    "stop",
    "stop_phase",
)
KEEP_FOCUS_SCRIPT = """<script>
(() => {
  if (window.agentcoreKeepFocus) return;
  window.agentcoreKeepFocus = true;
  const CONTROLS = __CONTROLS__, NEXT = __NEXT__;
  let pressed = null, since = 0;  // the phase's control last pressed, until the focus has somewhere to be
  const keyOf = (el) => {
    const box = el && el.closest ? el.closest('[class*="st-key-"]') : null;
    const name = box ? [...box.classList].find((c) => c.startsWith("st-key-")) : null;
    return name ? name.slice("st-key-".length) : null;
  };
  document.addEventListener("mousedown", () => { pressed = null; }, true);  // a click elsewhere: the person's
  document.addEventListener("click", (event) => {  // a mouse click or Enter and Space on the button
    const key = keyOf(event.target.closest ? event.target.closest("button") : null);
    pressed = key && CONTROLS.includes(key) ? key : null;
    since = performance.now();
  }, true);
  const settle = () => {
    if (pressed === null) return;
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute("data-test-script-state") !== "notRunning") {
      since = performance.now();  // the draw goes on: the while to look again counts from its end
      return;
    }
    const active = document.activeElement;  // a button just disabled may still hold it until the next frame
    if (active && active !== document.body && active.isConnected && !active.disabled) {
      if (keyOf(active) !== pressed) pressed = null;  // the person moved it: leave it there
      // still on the control pressed: a draw may yet take it away, so look again a while
      else if (performance.now() - since < 3000) setTimeout(later, 200);
      return;
    }
    for (const key of [pressed, ...NEXT]) {
      const button = document.querySelector(`.st-key-${key} button:not(:disabled)`);
      if (button) {
        button.focus();
        break;
      }
    }
    pressed = null;
  };
  let queued = false;
  const later = () => {
    if (!queued) {
      queued = true;
      requestAnimationFrame(() => { queued = false; settle(); });
    }
  };
  new MutationObserver(later).observe(document.body, { childList: true, subtree: true, attributeFilter: ["data-test-script-state", "disabled"] });
})();
</script>""".replace("__CONTROLS__", json.dumps(PHASE_CONTROLS)).replace("__NEXT__", json.dumps(NEXT_FOCUS))


def keep_focus() -> None:
    """Keep the keyboard's focus on a control after the draw a phase's button started (KEEP_FOCUS_SCRIPT)."""
    with st.container(key="keep_focus"):
        st.html(KEEP_FOCUS_SCRIPT, unsafe_allow_javascript=True)
