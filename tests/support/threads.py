"""Calling code on a thread other than the main one, as the app's script thread calls the loop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def off_main(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` called on a new thread, waited for; its value, or its exception raised here."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller
            box["error"] = exc

    thread = threading.Thread(target=call, name="off-main")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
