"""The message list: every message with its index, role and size; editing, inserting, deleting; violations."""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Callable, Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from agentcore.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolMessage,
    estimate_tokens,
    first_difference,
    validate_messages,
)
from agentcore.run import Run
from agentcore.steps import BY_HOOK, BY_PERSON, MOCKED_WORDS, NO_TOOLS_WORDS, REPEAT_WORDS, StepRecord, ToolRun

from . import actions, policy_view, reasoning_view, safe, words
from .conversation_view import author_badge
from .debug_view import render_mock_form
from .message_editor import render_editor
from .state import Session, get_session
from .style import MENU_PREFIX

PAGE_SIZE = 10  # each message drawn is drawn again on every Step: about 10 ms of the browser's time each
FOLD_CHARS = 600
ROLE_BADGE = {
    "system": ":gray-badge[system]",
    "user": ":blue-badge[user]",
    "assistant": ":violet-badge[assistant]",
    "tool": ":green-badge[tool]",
}

DECISION_ICON = {
    "approved": ":material/check:",
    "edited": ":material/edit:",
    "denied": ":material/block:",
    "typed": ":material/keyboard:",
}

NEW_BADGE = ":blue-badge[:material/fiber_new: new]"
NEW_KEY = "_new_messages"  # (run id, index of the first message the last phase added)
LATEST_SHOWN = 4  # the newest messages listed by the controls, one line each, so Step stays on screen with them
LATEST_CHARS = 72
MENU_LABEL = ":material/more_vert:"
INSERT_KEY = "insert_open"

Violations = dict[int, list[str]]


def _set_page(page: int | None) -> None:
    get_session().message_page = page


def mark_new(run: Run, since: int) -> None:
    """Mark the run's messages from `since` on as new: listed by the controls, marked in the message list."""
    st.session_state[NEW_KEY] = (run.id, since)
    get_session().message_page = None  # the new messages are on the latest page


def _new_since(run: Run) -> int | None:
    """The index of the run's first message added by the last phase run here; None when there is none."""
    marked = st.session_state.get(NEW_KEY)
    if not marked or marked[0] != run.id or marked[1] >= len(run.messages):
        return None
    return marked[1]


def _looks_json(content: str) -> bool:
    return content[:1] in "[{"


def _text_markdown(content: str, plain: bool = False) -> str:
    """Text as Markdown to show within a message's one block: JSON and `plain` text that fits as a code block.

    Markdown is the safe kind (ui.safe.markdown): formatting shows, images and links become their addresses.
    Plain text that is not JSON is left to `_plain_text` (empty here), a long text to its preview and `_fold`.
    """
    short = len(content) <= FOLD_CHARS
    if _looks_json(content):
        return safe.fenced(content if short else content[:240] + " …", "json")
    if plain:
        return ""
    return safe.markdown(content if short else content[:240] + " …")


def _plain_text(content: str) -> None:
    """A tool's output that is not JSON, as written: a Markdown heading in it must not become a page heading."""
    if not _looks_json(content):
        st.text(content if len(content) <= FOLD_CHARS else content[:240] + " …", width="stretch")


def _fold(content: str) -> None:
    """The whole of a long text, behind an expander."""
    if len(content) > FOLD_CHARS:
        with st.expander(f"Show all {len(content):,} characters"):
            st.code(content, language="json" if _looks_json(content) else None, wrap_lines=True)


def message_header(i: int, m: Message, answered: str | None = None, new: bool = False) -> str:
    """The message's index, role and size; for a model turn, the step and the model that wrote it."""
    head = f"**#{i}** &nbsp; {ROLE_BADGE[m.role]} &nbsp; :gray[{estimate_tokens(m.text)} tokens]"
    head = f"{head} &nbsp; {answered}" if answered else head
    return f"{head} &nbsp; {NEW_BADGE}" if new else head


class Record:
    """What the run recorded about its messages: the step behind each model turn, the tool run behind each result.

    Only the messages before `upto` are looked up (an edited list differs from there on).
    """

    def __init__(self, run: Run, upto: int) -> None:
        self._steps: dict[int, StepRecord] = {}
        self._tool_runs: dict[int, ToolRun] = {}
        self._run = run
        messages = run.messages[:upto]
        for step in run.steps:
            at = step.message_count
            if at >= len(messages) or not isinstance(messages[at], AssistantMessage):
                continue  # a file from before steps recorded their place
            self._steps[at] = step
            by_id = {t.tool_call_id: t for t in step.tool_runs}
            for j in range(at + 1, len(messages)):
                m = messages[j]
                if not isinstance(m, ToolMessage):
                    break
                if m.tool_call_id in by_id:
                    self._tool_runs[j] = by_id[m.tool_call_id]

    def answered(self, i: int) -> str | None:
        """`step 3 · local/smollm2-135m` for the model turn at `i`, as safe Markdown; None when not recorded."""
        step = self._steps.get(i)
        if step is None:
            return author_badge(self._run, i)  # a user turn of a conversation: who wrote it
        head = f"step {step.index} · {safe.code(self._run.answered_by(step).label)}"
        return f"{head} &nbsp; {NO_TOOLS_BADGE}" if step.tools_withheld else head

    def step_at(self, i: int) -> int | None:
        """The number of the step whose reply is the message at `i`; None for any other message."""
        step = self._steps.get(i)
        return step.index if step is not None else None

    def tool_run(self, i: int) -> ToolRun | None:
        """The tool run recorded for the result at `i`."""
        return self._tool_runs.get(i)


def tool_call_markdown(call: ToolCall, args: str) -> str:
    """A tool call's name, arguments (`args`, as text) and id; long arguments get a code block of their own."""
    head = f":material/build: **{safe.code(call.name)}**"
    if len(args) <= 100 and "\n" not in args:
        return f"{head} {safe.code(args)} &nbsp; {safe.code(call.id)}"
    return f"{head} &nbsp; {safe.code(call.id)}\n\n{safe.fenced(args, 'json')}"


def show_tool_call(call: ToolCall, args: str) -> None:
    """Draw a tool call's name, arguments and id."""
    st.markdown(tool_call_markdown(call, args))


REPEAT_BADGE = f":blue-badge[:material/repeat: {REPEAT_WORDS}]"
NO_TOOLS_BADGE = f":blue-badge[:material/repeat: {NO_TOOLS_WORDS}]"
MOCKED_BADGE = f":violet-badge[:material/science: {MOCKED_WORDS}]"


def _decision(tool_run: ToolRun | None) -> list[str]:
    """A person's decision on the call behind a result, as a badge; for an edit, what the model had asked.

    A call the loop guard answered from the run has its own badge.
    """
    if tool_run is not None and tool_run.source == "repeat":
        return [REPEAT_BADGE]
    if tool_run is not None and tool_run.source == "mocked":
        return [MOCKED_BADGE]
    if tool_run is not None and tool_run.source in BY_HOOK:  # a hook changed, refused or answered the call
        lines = [f":violet-badge[:material/webhook: {safe.inline(tool_run.badge or '')}]"]
        original = tool_run.original_arguments_text
        if tool_run.source == "hook_edited" and original is not None:
            lines.append(f"The model asked {safe.code(original)}")
        return lines
    if tool_run is None or not tool_run.by_person:
        return []
    icon = DECISION_ICON[tool_run.source]
    lines = [f":orange-badge[{icon} {BY_PERSON[tool_run.source]}]"]
    original = tool_run.original_arguments_text
    if tool_run.source == "edited" and original is not None:
        lines.append(f"The model asked {safe.code(original)}")
    if tool_run.original_content is not None:
        returned = tool_run.original_content
        cut = returned if len(returned) <= 200 else returned[:199] + "…"
        lines.append(f"The person changed this result; the tool returned {safe.code(cut)}")
    return lines


def message_markdown(m: Message, tool_run: ToolRun | None = None) -> str:
    """What a message says, as one block of safe Markdown: text, tool calls, a result's source and decision.

    A tool's plain-text output is not in it (`_plain_text` shows it as written), nor a call whose
    arguments are not JSON (`_invalid_calls` warns about it).
    """
    parts: list[str] = []
    if isinstance(m, AssistantMessage):
        if m.content:
            parts.append(_text_markdown(m.content))
        parts += [
            tool_call_markdown(call, json.dumps(call.arguments, ensure_ascii=False))
            for call in m.tool_calls
            if not call.arguments_invalid
        ]
    elif isinstance(m, ToolMessage):
        who = f"result of **{safe.code(m.name)}** {safe.code(m.tool_call_id)}"
        parts.append(f":red-badge[:material/error: error] {who}" if m.is_error else f":material/check_circle: {who}")
        parts += _decision(tool_run)
        parts.append(_text_markdown(m.content, plain=True))
    else:
        parts.append(_text_markdown(m.content))
    return "\n\n".join(part for part in parts if part)


def _invalid_calls(m: Message) -> None:
    for call in m.tool_calls if isinstance(m, AssistantMessage) else ():
        if call.arguments_invalid:
            st.markdown(f":material/build: **{safe.code(call.name)}** &nbsp; {safe.code(call.id)}")
            st.warning(
                f"Arguments are not a JSON object: {safe.code(call.raw_arguments or '')}", icon=":material/warning:"
            )


def message_extras(m: Message, reasoning_tokens: int | None = None) -> None:
    """The parts of a message drawn apart from its Markdown block: plain output, bad arguments, a long text."""
    reasoning_view.show_reasoning(m, reasoning_tokens)  # collapsed, with the calls it led to
    if isinstance(m, ToolMessage):
        _plain_text(m.content)
    _invalid_calls(m)
    _fold(m.content or "")


def show_messages(messages: Sequence[Message], run: Run | None = None, start: int = 0) -> None:
    """Draw a message list to read, without edit controls (the compare page's columns); `start` is the first
    message's number in the run, so a column shown from step k keeps the run's own numbers."""
    for i, m in enumerate(messages, start):
        with st.container(border=True):
            st.markdown(f"{message_header(i, m)}\n\n{message_markdown(m)}")
            message_extras(m, reasoning_view.reported_tokens(run, i, m))


def show_newest(run: Run) -> None:
    """The run's last message, to read, marked new: what Run to end shows after each phase."""
    if not run.messages:
        return
    i = len(run.messages) - 1
    m = run.messages[i]
    record = Record(run, len(run.messages))
    with st.container(border=True):
        st.markdown(
            f"{message_header(i, m, record.answered(i), new=True)}\n\n{message_markdown(m, record.tool_run(i))}"
        )
        message_extras(m, reasoning_view.reported_tokens(run, i))


def show_refusal(session: Session, key: str) -> None:
    """Why the value of the field `key` could not be used, under the field itself; nothing when it was not refused."""
    if session.refused is not None and session.refused[0] == key:
        st.error(safe.block(session.refused[1]), icon=":material/error:")


def _cut(text: str, limit: int = LATEST_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_line(i: int, m: Message, calls: bool = True) -> str:
    """One message as one short line of safe Markdown: its number, its role and the start of what it says.

    An assistant's tool calls follow its text, unless `calls` is False (where they are listed apart).
    """
    parts = [f"**#{i}** {ROLE_BADGE[m.role]}"]
    if isinstance(m, AssistantMessage):
        parts += [safe.inline(_cut(m.content))] if m.content else []
        parts += [f"→ {safe.code(_cut(f'{c.name}({c.arguments_text})', 60))}" for c in m.tool_calls if calls]
    elif isinstance(m, ToolMessage):
        parts += [f"{safe.code(m.name)}{' :red-badge[error]' if m.is_error else ''}", safe.code(_cut(m.content))]
    else:
        parts.append(safe.inline(_cut(m.content or "")))
    return " ".join(parts)


def render_latest(session: Session) -> None:
    """The messages the last phase added, a line each, drawn by the controls: what the Step did, in view with it."""
    run = session.run
    since = None if run is None or session.draft is not None else _new_since(run)
    if run is None or since is None:
        return
    new = run.messages[since:]
    head = (
        f"{NEW_BADGE} **{words.plural(len(new), 'new message')}** of {len(run.messages)}, each in full under Messages"
    )
    lines = [message_line(since + k, m) for k, m in enumerate(new[:LATEST_SHOWN])]
    if len(new) > LATEST_SHOWN:
        lines.append(f"and {words.plural(len(new) - LATEST_SHOWN, 'more message')}")
    with st.container(border=True, key="latest"):
        st.markdown("  \n".join([head, *lines]))


def _editor(session: Session, i: int, m: Message) -> None:
    save = functools.partial(actions.save_edit, i)
    render_editor(actions.EDIT_PREFIX, i, m, save, actions.cancel_edit, refused=session.refused)


def _violations(messages: list[Message]) -> Violations:
    found: Violations = defaultdict(list)
    for v in validate_messages(messages):
        found[v.index].append(v.reason)
    return found


def _draft_bar(run: Run, draft: list[Message], violations: Violations) -> None:
    """The unapplied edits: what applying them does, whether a fork keeps the later messages, Apply and Discard."""
    with st.container(border=True):
        forks = run.edit_forks(draft)
        if forks:
            note = (
                " Applying makes a **fork**: the edit changes what an earlier step saw, and the original run is "
                "kept. The fork ends before the model's next reply, since what came after answered the old messages."
            )
        else:
            note = " Applying changes this run in place (nothing the model has seen changes)."
        st.markdown(f":orange-badge[:material/edit: editing] Unapplied edits.{note}")
        if forks:
            st.checkbox(
                "Keep the messages after the edit",
                key="keep_later",
                help="The fork keeps the whole edited list; the model then reads later messages that answered the old one",
            )
        a, b, _ = st.columns([1, 1, 4])
        a.button(
            "Apply edits", key="apply_edits", type="primary", on_click=actions.apply_draft, disabled=bool(violations)
        )
        b.button("Discard edits", key="discard_edits", on_click=actions.discard_draft)
        if violations:
            count = sum(map(len, violations.values()))
            st.error(
                f"{count} problem{'s' if count != 1 else ''} in the list: fix {'them' if count != 1 else 'it'} to apply."
            )


def _page_range(session: Session, total: int) -> range:
    """The indices on the page shown, with the pager when there is more than one page."""
    # pages count back from the newest message, so the latest page is always full
    pages = max(1, -(-total // PAGE_SIZE))
    back = min(session.message_page or 0, pages - 1)
    hi = total - back * PAGE_SIZE
    lo = max(0, hi - PAGE_SIZE)
    if pages > 1:
        p1, p2, p3 = st.columns([1, 3, 1], vertical_alignment="center")
        p1.button("◀ Earlier", key="msg_prev", disabled=lo == 0, on_click=_set_page, args=(back + 1,))
        p2.caption(f"Messages {lo}–{hi - 1} of {total}")
        p3.button("Later ▶", key="msg_next", disabled=back == 0, on_click=_set_page, args=(back - 1,))
    return range(lo, hi)


def menu_key(i: int) -> str:
    """The key of the menu of the message at `i`: True in the session state while it is open."""
    return f"{MENU_PREFIX}{i}"


def _from_menu(action: Callable[[int], None], i: int) -> None:
    """Run a menu's action on the message at `i`, and close the menu: the row it was opened on changes."""
    st.session_state[menu_key(i)] = False
    action(i)


def _row_menu(session: Session, row: DeltaGenerator, i: int, m: Message, step: int | None) -> None:
    """The row's actions in one menu, drawn only once it is opened.

    Edit, delete, compare from here (a model turn a step recorded) and the mock form (a tool result). A closed
    menu is one element: what it holds is not sent and drawn again with every Step, whose time in the browser
    follows the elements it redraws.
    """
    menu = row.popover(MENU_LABEL, key=menu_key(i), on_change="rerun")
    if not menu.open:
        return
    editing = session.editing == i
    if not editing:
        menu.button("Edit", icon=":material/edit:", key=f"edit_{i}", on_click=_from_menu, args=(actions.begin_edit, i))
    menu.button(
        "Delete", icon=":material/delete:", key=f"del_{i}", on_click=_from_menu, args=(actions.delete_message, i)
    )
    if step is not None and menu.button(
        "Compare from here",
        icon=":material/compare_arrows:",
        key=f"cmp_from_{i}",
        help=f"Ask step {step} again on other models, beside what this run did from there",
    ):
        actions.compare_from(session.run, step)
    if isinstance(m, ToolMessage) and session.draft is None and not editing:
        menu.markdown(":material/science: **Mock this result**")
        render_mock_form(menu, i, m)


def _message_row(
    session: Session, i: int, m: Message, reasons: list[str], record: Record, new: bool, upcoming: Run
) -> None:
    """One message with its menu, its editor when open, and what is wrong with it.

    Its marks say what the next request (`upcoming`: the run with the sidebar's settings) does with it.

    The header and the body are one Markdown block beside the menu: every element is a delta sent and drawn
    again on each Step, so a message is as few elements as it can be.
    """
    editing = session.editing == i
    with st.container(border=True, key=f"msg_{i}"):
        row = st.container(horizontal=True, wrap=False, vertical_alignment="top", gap="small")
        head = message_header(i, m, record.answered(i), new) + policy_view.row_badge(
            upcoming, i, session.draft is not None
        )
        row.markdown(head if editing else f"{head}\n\n{message_markdown(m, record.tool_run(i))}", width="stretch")
        _row_menu(session, row, i, m, record.step_at(i) if session.draft is None else None)
        if editing:
            _editor(session, i, m)
        else:
            message_extras(m, reasoning_view.reported_tokens(session.run, i, m))
        for reason in reasons:
            st.error(safe.block(reason), icon=":material/rule:")


def _insert_form(total: int) -> None:
    """The form to insert a message, drawn only once its expander is opened (not again on every Step)."""
    box = st.expander("Insert a message", key=INSERT_KEY, on_change="rerun")
    if not box.open:
        return
    with box:
        c1, c2 = st.columns(2)
        c1.number_input("At index", min_value=0, max_value=total, value=total, key="ins_pos")
        role = c2.selectbox("Role", ["user", "assistant", "tool"], key="ins_role")
        if role == "tool":
            t1, t2 = st.columns(2)
            t1.text_input("Tool call id", key="ins_call_id")
            t2.text_input("Tool name", key="ins_tool_name")
        st.text_area("Content", key="ins_content", height=80)
        st.button("Insert", key="ins_go", on_click=actions.insert_message)


def render_messages(session: Session) -> None:
    """Draw the message list of the current run (or of the pending draft), one page at a time."""
    run = session.run
    if run is None:
        return
    messages = session.draft if session.draft is not None else run.messages
    violations = _violations(messages)
    if session.draft is not None:
        _draft_bar(run, session.draft, violations)
    upcoming = actions.upcoming(session) or run  # the next request is made with the sidebar's settings
    policy_view.render_panel(upcoming, session.draft, session.config)  # the request beside the history, the gauge
    record = Record(run, first_difference(run.messages, messages))
    since = _new_since(run) if session.draft is None else None
    shown = _page_range(session, len(messages))
    for i in shown:
        _message_row(session, i, messages[i], violations.get(i, []), record, since is not None and i >= since, upcoming)
    for reason in violations.get(len(messages), []):
        st.error(safe.block(reason), icon=":material/rule:")
    _insert_form(len(messages))
