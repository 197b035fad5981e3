"""The page says when a call waits for the embedded model, and how many calls are ahead of it."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _waits(*heard: int) -> None:
    from ui.actions import _wait_notice

    on_wait = _wait_notice()
    for ahead in heard:
        on_wait(ahead)


def test_a_waiting_call_shows_how_many_calls_are_ahead_and_the_notice_goes_when_its_turn_comes():
    at = AppTest.from_function(_waits, args=(2,)).run()
    assert [c.value for c in at.caption] == [":material/hourglass_top: Waiting for the embedded model: 2 calls ahead"]
    at = AppTest.from_function(_waits, args=(2, 1)).run()
    assert [c.value for c in at.caption] == [":material/hourglass_top: Waiting for the embedded model: 1 call ahead"]
    at = AppTest.from_function(_waits, args=(2, 1, 0)).run()
    assert not at.caption
