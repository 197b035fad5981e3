"""A reply cut at the output limit, as the playground shows it: the run picker and the stop reason say so, and the
advice names the sidebar's Max output tokens, which a run takes and a run opened shows."""

from __future__ import annotations

from support.app import click, session, start
from support.runs import weather_run

from ui.state import Session
from ui.steps_view import run_label


def _cut_run():
    run = weather_run()
    run.steps[-1].finish_reason = "length"
    return run


def test_the_run_picker_says_a_cut_reply_stopped_at_the_output_limit_not_answer():
    session = Session()
    cut, whole = _cut_run(), weather_run()
    session.add_run(whole)
    session.add_run(cut)
    assert run_label(session, cut).endswith("· output limit")
    assert run_label(session, whole).endswith("· answer")


def test_the_advice_for_a_cut_reply_names_the_sidebars_max_output_tokens(open_app):
    session = Session()
    session.add_run(_cut_run())
    app = open_app(session=session)
    advice = next(m.value for m in app.main.markdown if "Stop reason" in m.value)
    assert "stopped at the output limit" in advice and "Max output tokens" in advice
    assert app.sidebar.number_input(key="cfg_max_tokens").label == "Max output tokens"
    # the picker lists the cut run by its ending, beside another run
    session.add_run(weather_run())
    app.run()
    picker = app.selectbox(key="current_run")
    assert picker.format_func(next(iter(session.runs))).endswith("· output limit")


def test_max_output_tokens_goes_to_the_run_and_a_run_opened_shows_its_own(open_app):
    app = open_app()
    run = start(app, cfg_max_tokens=64)
    assert run.config.max_tokens == 64
    click(app, "step")
    assert run.config.max_tokens == 64
    other = weather_run(max_tokens=300)
    session(app).add_run(other)
    app.run()
    assert app.number_input(key="cfg_max_tokens").value == 300


def test_the_stop_reason_is_said_once_in_plain_words(open_app):
    from agentcore.messages import AssistantMessage
    from ui.announcement import announcement

    run = weather_run()
    run.messages[-1] = AssistantMessage(
        content="## Weather\n\n- **Paris**: _sunny_, `22 °C`\n- see [the forecast](https://example.com/f)\n"
        "```\nraw\n```\nget_weather_now keeps its name"
    )
    heard = announcement(run)
    assert heard.endswith("Stop reason: answered.")
    assert "Paris: sunny, 22 °C see the forecast raw get_weather_now keeps its name" in heard
    assert not any(mark in heard for mark in "*`#[]")
    session = Session()
    session.add_run(run)
    app = open_app(session=session)
    # on the page, the stop reason is text in a box: no st.info, st.success or st.warning, each a live region
    assert [m.value for m in app.markdown if "Stop reason" in m.value]
    assert not any("Stop reason" in a.value for a in [*app.info, *app.success, *app.warning])
