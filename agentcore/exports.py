"""Exports: a run's transcript, a provider request body, its replay page, its OpenTelemetry trace, several runs in
a zip, a comparison bundle, a pinned test file, a table as CSV.

Every page of the app and every command of the CLI that hands data out does it through here.
Every export first masks each credential by kind (`detectors.mask`: a known secret, a key's shape, what
detect-secrets' plugins find, a tool argument named like a credential, each written `[redacted: KIND]`), so a
run masks the same way in its JSON, ATIF, OTLP, replay page, request bodies and pinned test. Every JSON export
is then text written by the one writer transcripts use (`transcript.json_text`) after `redact_fields`, so text
holding a lone surrogate is written too and every credential-named field is removed. The replay page
(replay.py) embeds JSON written the same way; a CSV table is masked as text.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from typing import Any

from .errors import UsageError
from .hooks.chain import code_free_request
from .messages import AssistantMessage, numbered
from .providers import WIRE_FORMATS, get_info
from .replay import replay_html
from .request import base_request, request_settings, settings_refusal, whole_history
from .run import Run
from .secrets import redact_fields
from .secrets.detectors import mask, mask_text
from .telemetry import OTLP_JSON, require_otel
from .testing.pinned import PinnedTest, data_text, to_data
from .transcript import fitted_text, json_text, to_dict

ATIF = "atif"  # an ATIF v1.7 trajectory (agentcore.sessions.atif_export), with its subagents where they are given
FORMATS = ("json", *WIRE_FORMATS)  # what `agentcore runs export --format` and the runs page offer
REPLAY = "html"  # the replay page: one self-contained HTML file that steps through the run offline
# OTLP_JSON: the run's OpenTelemetry GenAI trace, a file Jaeger UI, Tempo and Phoenix load (agentcore.telemetry)
# the other files a page offers for a run: its cost table, and a comparison it is the first column of
_OTHER_KINDS = {"cost": ".cost.csv", "comparison": ".comparison.json"}


def export_filename(run: Run, kind: str) -> str:
    """The one name a download of `run` gets on every page: `agentcore-run-<id>.json`, `….openai.json`, `….cost.csv`.

    `kind` is one of FORMATS, REPLAY, `cost` or `comparison`.
    """
    if kind == "json":
        suffix = ".json"
    elif kind in WIRE_FORMATS:
        suffix = f".{kind}.json"
    elif kind == REPLAY:
        suffix = ".html"
    elif kind == OTLP_JSON:
        suffix = ".otlp.json"
    elif kind == ATIF:
        suffix = ".atif.json"
    elif kind in _OTHER_KINDS:
        suffix = _OTHER_KINDS[kind]
    else:
        raise ValueError(f"no export of kind {kind!r}")
    return f"agentcore-run-{_safe_name(run.id)}{suffix}"


def export_text(data: Any) -> str:
    """Exported JSON data as text: indented, readable, always writable as UTF-8, every credential masked."""
    return json_text(redact_fields(mask(data)), indent=2)


def export_json(run: Run) -> str:
    """The run as the project's transcript JSON, within the size every reader takes (transcript.fitted_text)."""
    return fitted_text(to_dict(mask(run)), prepare=redact_fields)  # export_text's own redaction


def export_body(run: Run, fmt: str, *, model: str | None = None) -> str:
    """The request body `fmt`'s API would receive for the run's next model call, as JSON text."""
    return export_text(export_request(run, fmt, model=model))


def export_otlp(run: Run, *, content: bool = True) -> str:
    """The run as an OTLP-JSON trace of the GenAI conventions; message content only when `content` is set."""
    require_otel()
    from .telemetry.otlp import otlp_json

    return otlp_json(mask(run), content=content)


def export_atif(run: Run, subagents: list[Run] | None = None) -> str:
    """The run as an ATIF v1.7 trajectory, the runs in `subagents` that it links to embedded in it."""
    from .sessions.atif_export import to_atif

    return export_text(to_atif(run, subagents))


def export_run(
    run: Run, fmt: str, *, model: str | None = None, content: bool = True, subagents: list[Run] | None = None
) -> str:
    """The run as `fmt`: transcript JSON (`json`), the replay page (`html`), its OpenTelemetry trace (`otlp-json`,
    with message content when `content` is set), an ATIF trajectory (`atif`, embedding `subagents`), or a wire
    format's request body."""
    if fmt == "json":
        return export_json(run)
    if fmt == ATIF:
        return export_atif(run, subagents)
    if fmt == REPLAY:
        return export_replay(run)
    if fmt == OTLP_JSON:
        return export_otlp(run, content=content)
    return export_body(run, fmt, model=model)


def export_replay(run: Run) -> str:
    """The run's replay page: one self-contained HTML file that steps through it offline."""
    return replay_html(mask(run))


def export_bundle(bundle: dict[str, Any]) -> str:
    """A comparison bundle (`Comparison.bundle()`) as JSON text."""
    return export_text(bundle)


def export_test(test: PinnedTest, yaml_format: bool = False) -> str:
    """A pinned test file's text (JSON, or YAML when asked), its pinned run redacted as a transcript export is."""
    return data_text(redact_fields(mask(to_data(test))), yaml_format)


def export_csv(rows: list[dict[str, Any]]) -> str:
    """A table (one dict per row, the first row's keys as the header) as CSV text, an empty cell for None."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return mask_text(out.getvalue())


def export_zip(runs: list[Run], formats: tuple[str, ...] = ("json",), *, content: bool = True) -> bytes:
    """Several runs in one zip: `<id>.json` each, `<id>.<format>.json` for each wire format asked for, `<id>.html`,
    `<id>.otlp.json` (with message content when `content` is set).

    A run whose settings a format's model refuses gets `<id>.<format>.txt`, the one line that says why, in place
    of its body.
    """
    unknown = [f for f in formats if f not in FORMATS and f not in (REPLAY, OTLP_JSON, ATIF)]
    if unknown:
        kinds = ", ".join((*FORMATS, REPLAY, OTLP_JSON, ATIF))
        raise UsageError(f"no export of kind {unknown[0]!r}; choose one of {kinds}")
    buffer = io.BytesIO()
    taken: set[str] = set()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for run in {r.id: r for r in runs}.values():
            name = numbered(_safe_name(run.id), taken, sep="-")
            archive.writestr(f"{name}.json", export_json(run))
            for fmt in formats:
                if fmt == REPLAY:
                    archive.writestr(f"{name}.html", export_replay(run))
                elif fmt == OTLP_JSON:
                    archive.writestr(f"{name}.otlp.json", export_otlp(run, content=content))
                elif fmt == ATIF:
                    archive.writestr(f"{name}.atif.json", export_atif(run))
                elif fmt != "json":
                    try:
                        archive.writestr(f"{name}.{fmt}.json", export_body(run, fmt))
                    except UsageError as exc:
                        archive.writestr(f"{name}.{fmt}.txt", f"{exc}\n")
    return buffer.getvalue()


def _safe_name(run_id: str) -> str:
    # the id of a run read from a file may hold anything (a path, a NUL): a file name keeps only what is safe
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:64].lstrip(".") or "run"


# -- a run's request as one provider's body ----------------------------------------------


def export_request(run: Run, fmt: str, *, model: str | None = None, stream: bool = False) -> dict[str, Any]:
    """The request body `fmt` would receive for the run's messages and tools (the final-answer tool included).

    The model is the run's own when the run used that provider, else the registry's default for it.
    The run's settings go with it as the loop sends them (temperature, max tokens, seed, reasoning, prompt
    caching's breakpoints); reasoning another provider made is left out (see ReasoningPart), and so is thinking
    the model would refuse after what the run's policies changed (request.whole_history). For Anthropic
    a finished run exports the request that got its answer: a body ending on the assistant's turn is a
    prefill, which current models reject. Settings the model refuses (the catalogue's documented rules) are a
    UsageError that says why, not a body its API would answer with a 400.
    """
    if fmt not in WIRE_FORMATS:
        raise UsageError(f"unknown wire format {fmt!r}; choose one of {', '.join(WIRE_FORMATS)}")
    if model is None:
        model = run.config.model if run.config.provider == fmt and run.config.model else get_info(fmt).default_model
    messages = tuple(run.messages)
    if fmt == "anthropic" and messages and isinstance(messages[-1], AssistantMessage) and not messages[-1].tool_calls:
        messages = messages[:-1]
    refused = settings_refusal(run, fmt, model)
    if refused:
        raise UsageError(f"not exported: {refused}")
    unbound = whole_history(run, fmt, model)  # thinking a model refuses after what policies changed stays out
    if unbound is not None:
        messages = tuple(unbound.messages(messages))
    # as the run's chain sends it: the loop guard's and the run's named hooks' changes (a redactor's masks) included
    request = code_free_request(run, base_request(run, messages, request_settings(run.config)))
    options: dict[str, Any] = {}
    if fmt == "openai":
        from .providers.openai import max_tokens_field_for

        # as the adapter sends it: the run's own server when it ran on Chat Completions, else OpenAI's API
        options["max_tokens_field"] = max_tokens_field_for(run.config.base_url if run.config.provider == fmt else None)
    return get_info(fmt).body_builder()(model, request, stream=stream, **options)
