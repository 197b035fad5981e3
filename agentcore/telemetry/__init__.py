"""OpenTelemetry in and out: a run as GenAI-convention spans (OTLP-JSON, OTLP/HTTP, live), and traces read back as runs.

Exporting needs the `otel` extra; reading an OTLP-JSON file needs nothing beyond agentcore itself.
"""

from __future__ import annotations

from importlib.util import find_spec

from ..errors import UsageError

OTLP_JSON = "otlp-json"  # the export format: an OTLP-JSON file of the run's trace
CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"  # the instrumentations' switch for content


def otel_missing() -> str | None:
    """The first package of the `otel` extra that is not installed, or None when all are."""
    needed = ("opentelemetry.sdk", "opentelemetry.proto", "opentelemetry.exporter.otlp.proto.http")
    for name in needed:
        try:
            if find_spec(name) is None:
                return name
        except ModuleNotFoundError:  # a parent package is missing altogether
            return name
    return None


def require_otel() -> None:
    """Raise a one-line UsageError unless the `otel` extra (the OpenTelemetry SDK and OTLP exporter) is installed."""
    missing = otel_missing()
    if missing:
        raise UsageError(
            f"exporting OpenTelemetry traces needs the otel extra: pip install 'agentcore[otel]' (missing {missing})"
        )
