"""What a run keeps is read back: a reasoning summary keeps a bounded number of parts, a step keeps a large
response cut with a note, and a transcript file too large for a reader is written with its largest wire bodies cut.
"""

from __future__ import annotations

import json

import pytest
from support.stand_in import Reply, StandIn

from agentcore import transcript
from agentcore.errors import TranscriptError
from agentcore.exports import export_json
from agentcore.loop import Agent
from agentcore.messages import MAX_SUMMARY_PARTS, AssistantMessage, ReasoningPart, UserMessage
from agentcore.providers import create_provider
from agentcore.providers.base import WIRE_TEXT_LIMIT, WireExchange
from agentcore.run import Run, RunConfig
from agentcore.steps import WIRE_KEEP_CHARS, StepRecord

MiB = 2**20


def test_a_summary_keeps_its_text_in_a_bounded_number_of_parts_none_empty():
    texts = tuple(f"**Step {i}**\n\nthought {i}" for i in range(3 * MAX_SUMMARY_PARTS))
    part = ReasoningPart(provider="openai-responses", summary=("",) * 10_000 + texts + ("",))
    assert len(part.summary) == MAX_SUMMARY_PARTS and "" not in part.summary
    assert part.display_text == "\n\n".join(texts)  # what a person reads is unchanged
    few = ReasoningPart(provider="openai-responses", summary=("one", "", "two"))
    assert few.summary == ("one", "two")
    again = ReasoningPart.model_validate_json(part.model_dump_json())
    assert again == part  # a transcript reads back as it was written


def test_a_step_keeps_a_large_response_cut_with_a_note_and_a_small_one_whole():
    big = {"output": [{"type": "summary_text", "text": ""}] * (WIRE_KEEP_CHARS // 30)}
    step = StepRecord(index=1, wire=WireExchange(url="http://x", request={"a": 1}, status=200, response=big))
    kept = step.wire.response
    whole = json.dumps(big, separators=(",", ":"))
    assert isinstance(kept, str) and kept.startswith(whole[:WIRE_TEXT_LIMIT])
    assert kept.endswith(f"… [cut: {len(whole)} characters of JSON in all; a step keeps {WIRE_KEEP_CHARS} whole]")
    assert (step.wire.url, step.wire.status, step.wire.request) == ("http://x", 200, {"a": 1})
    small = {"output": [{"type": "summary_text", "text": "fine"}]}
    assert StepRecord(index=1, wire=WireExchange(response=small)).wire.response == small


def steps_with_requests(count: int, size: int) -> Run:
    """A run of `count` answered steps, each of whose wire requests is about `size` characters of JSON."""
    run = Run.start("q")
    for index in range(1, count + 1):
        body = {"messages": [{"role": "user", "content": f"{index} " + "x" * size}]}
        run.steps.append(
            StepRecord(index=index, message_count=len(run.messages), wire=WireExchange(request=body, response={}))
        )
        run.append(AssistantMessage(content=f"answer {index}"))
        run.append(UserMessage(content=f"and {index}?"))
    return run


def test_a_transcript_over_the_readers_limit_is_written_with_its_largest_wire_bodies_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_FILE_BYTES", MiB)
    run = steps_with_requests(8, 200_000)
    assert len(json.dumps(transcript.to_dict(run), indent=2)) > 1.5 * MiB
    transcript.save(run, tmp_path / "run.json")
    assert (tmp_path / "run.json").stat().st_size <= MiB
    back = transcript.load(tmp_path / "run.json")
    assert back.messages == run.messages and len(back.steps) == 8
    cut = [s for s in back.steps if isinstance(s.wire.request, str)]
    assert cut and all("… [cut: " in s.wire.request and "over the 1 MB a reader takes]" in s.wire.request for s in cut)
    assert all(s.wire.request == run.steps[s.index - 1].wire.request for s in back.steps if s not in cut)
    exported = export_json(run)  # the app's download and `agentcore run --out`
    assert len(exported.encode()) <= MiB and transcript.loads(exported).messages == run.messages
    assert not isinstance(run.steps[0].wire.request, str)  # the run itself keeps its bodies


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_transcript_over_the_limit_only_when_indented_is_written_whole_without_indentation(tmp_path, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_FILE_BYTES", MiB)
    run = steps_with_requests(3, 200_000)
    run.steps[0].wire = WireExchange(request={"rows": [[k, k + 1] for k in range(40_000)]})
    assert len(json.dumps(transcript.to_dict(run), indent=2)) > MiB > len(json.dumps(transcript.to_dict(run)))
    text = export_json(run)
    assert len(text.encode()) <= MiB and "\n" not in text
    assert transcript.loads(text) == transcript.loads(transcript.dumps(run)) == run


def test_a_run_too_large_for_a_reader_even_without_its_wire_bodies_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_FILE_BYTES", MiB)
    run = steps_with_requests(2, 300_000)
    run.append(AssistantMessage(content="y" * MiB))
    with pytest.raises(TranscriptError) as caught:
        transcript.save(run, tmp_path / "run.json")
    assert "even with its wire bodies cut, over the 1 MB a reader takes" in str(caught.value)
    assert "\n" not in str(caught.value) and not (tmp_path / "run.json").exists()


@pytest.mark.slow
def test_a_reply_of_600000_empty_summary_parts_makes_a_run_whose_transcript_reads_back(tmp_path):
    summary = [{"type": "summary_text", "text": ""}] * 600_000
    reply = {
        "id": "resp_1",
        "status": "completed",
        "usage": {"input_tokens": 5, "output_tokens": 5},
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": summary, "encrypted_content": "opaque"},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
        ],
    }
    body = json.dumps(reply).encode()
    assert 20 * MiB < len(body) < 32 * MiB  # inside the provider's body limit
    with StandIn(Reply(body)) as server:
        provider = create_provider(
            "openai-responses", "gpt-5", base_url=f"{server.url}/v1", api_key="sk-test-0000000000"
        )
        run = Run.start("hi", RunConfig(provider="openai-responses", model="gpt-5"))
        Agent(provider, []).run(run)
    assert run.stop_reason == "answer" and run.final_answer() == "ok"
    transcript.save(run, tmp_path / "run.json")
    back = transcript.load(tmp_path / "run.json")
    assert back.messages == run.messages
    (part,) = back.messages[-1].reasoning
    assert (part.id, part.summary, part.encrypted_content) == ("rs_1", (), "opaque")
    assert back.steps[0].wire.response.endswith(f"a step keeps {WIRE_KEEP_CHARS} whole]")
    assert transcript.loads(export_json(run)).messages == run.messages
