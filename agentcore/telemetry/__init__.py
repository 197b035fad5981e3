"""OpenTelemetry in and out: a run as GenAI-convention spans (OTLP-JSON, OTLP/HTTP, live), and traces read back as runs.

Exporting needs the `otel` extra; reading an OTLP-JSON file needs nothing beyond agentcore itself.
"""
