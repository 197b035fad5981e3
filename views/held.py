"""Held calls: the requests `agentcore proxy --pause` holds, each with its exact request and four ways on (Send,
Edit and send, Answer with, Fork here; ui.held_view). The playground shows the same calls live above its run."""

from __future__ import annotations

import streamlit as st

from ui.held_view import render_holds
from ui.state import get_store


def main() -> None:
    st.title("Held calls")
    render_holds(get_store())


main()
