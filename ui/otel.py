"""The app's OpenTelemetry export: every step sent as it finishes when OTEL_EXPORTER_OTLP_ENDPOINT is set.

One live export serves the whole server (it is a pipe to one endpoint, not a cache of anyone's data); message
content goes only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is true, as the instrumentations do.
A failure never stops a run: the page shows it in one line (`problem`).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from agentcore.loop import Event, Observer
from agentcore.run import Run
from agentcore.telemetry import CONTENT_ENV, otel_missing

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
_lock = threading.Lock()
_live: dict[str, Any] = {}  # the endpoint's live export, made on first use; "error": why there is none


def _export() -> Any:
    url = os.environ.get(ENDPOINT_ENV, "").strip()
    if not url:
        return None
    with _lock:
        if _live.get("url") != url:
            _live.clear()
            _live["url"] = url
            missing = otel_missing()
            if missing:
                _live["error"] = f"{ENDPOINT_ENV} is set, but the otel extra is not installed (missing {missing})"
            else:
                from agentcore.errors import UsageError
                from agentcore.telemetry.otlp import LiveExport

                content = os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")
                try:
                    _live["export"] = LiveExport(url, content=content)
                except UsageError as exc:
                    _live["error"] = str(exc)
        return _live.get("export")


def observer(run: Run) -> list[Observer]:
    """The observers that send `run`'s steps as they finish: one when an endpoint is set, else none."""
    live = _export()
    if live is None:
        return []

    def on_event(event: Event) -> None:
        if event.kind in ("phase_finished", "step_finished", "run_finished", "error", "halted"):
            live.step_finished(run)

    return [on_event]


def problem() -> str | None:
    """The live export's last failure, or why there is none though an endpoint is set; None when all is well."""
    live = _export()
    return _live.get("error") if live is None else live.problem
