"""The embedded model's shared state: a fair queue of calls, and the evaluated prompt kept between calls.

One llama.cpp context serves every run, browser session and compare column of the process, one call
at a time. Calls wait in a first-come, first-served queue (a threading.Lock is not fair: a thread
that releases it can take it again ahead of the threads that waited), and a waiting caller can be
told how many calls are ahead of it.

Between calls the context keeps the tokens it has evaluated (its KV cache). The next call evaluates
only what differs from them: the longest common prefix is read from the cache. Two rules make a
cached prefix give the very numbers a fresh evaluation would:

- llama.cpp computes a batch of one token through other kernels than a batch of several, and the
  results differ in the last bits (a logit by up to about 0.2 here), enough to flip a greedy choice
  between two close tokens. So the prompt is never evaluated in a batch of one token, and the tokens
  the model generated (evaluated one at a time) are never reused: the next call evaluates them again
  in a batch, as a fresh evaluation of the same messages would. Batches of two or more tokens give
  identical results whatever their size and boundaries.
- A call whose messages share little with the cached tokens (another run, another session) first
  saves the cached state, so the run it belonged to finds its prefix again on its next call.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

WaitSink = Callable[[int], None]

_ON_WAIT: contextvars.ContextVar[WaitSink | None] = contextvars.ContextVar("agentcore_on_wait", default=None)

# Saved states of other conversations: bytes of KV cache in all (SmolLM2-135M keeps about 23 KB a token).
SAVED_STATE_BYTES = 512 * 1024 * 1024
# A conversation is saved before another one replaces more than this many of its tokens.
SAVE_AFTER_TOKENS = 32


@contextlib.contextmanager
def report_waits(on_wait: WaitSink | None) -> Iterator[None]:
    """While the block runs, each wait for the embedded model calls `on_wait(calls ahead)`, then `on_wait(0)`."""
    token = _ON_WAIT.set(on_wait)
    try:
        yield
    finally:
        _ON_WAIT.reset(token)


class FairQueue:
    """A lock that serves its callers in the order they came, and tells each how many calls are ahead."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0  # the ticket the next caller draws
        self._serving = 0  # the ticket whose holder may run now
        self._abandoned: set[int] = set()

    @property
    def waiting(self) -> int:
        """How many calls wait behind the one running now."""
        with self._cond:
            return max(0, self._next - self._serving - 1)

    @contextlib.contextmanager
    def hold(self, on_wait: WaitSink | None = None) -> Iterator[None]:
        """Wait for this caller's turn, then hold the queue for the block; `on_wait` (or report_waits') hears the wait."""
        on_wait = on_wait or _ON_WAIT.get()
        with self._cond:
            ticket = self._next
            self._next += 1
        try:
            self._wait_for(ticket, on_wait)
        except BaseException:
            self._leave(ticket)  # a caller stopped while waiting (a Streamlit rerun) must not stall the others
            raise
        try:
            yield
        finally:
            self._leave(ticket)

    def _wait_for(self, ticket: int, on_wait: WaitSink | None) -> None:
        told = None
        while True:
            with self._cond:
                ahead = ticket - self._serving
                if ahead > 0 and ahead == told:
                    self._cond.wait()
                    ahead = ticket - self._serving
            if ahead <= 0:
                if told is not None and on_wait is not None:
                    on_wait(0)
                return
            if on_wait is not None and ahead != told:
                on_wait(ahead)  # outside the condition, so a slow listener delays no one else
            told = ahead

    def _leave(self, ticket: int) -> None:
        with self._cond:
            if ticket != self._serving:
                self._abandoned.add(ticket)
                return
            self._serving += 1
            while self._serving in self._abandoned:
                self._abandoned.discard(self._serving)
                self._serving += 1
            self._cond.notify_all()


def longest_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two sequences share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class PromptUse:
    """One completion's prompt: its length in tokens, and how many were evaluated rather than read from the cache."""

    tokens: int
    evaluated: int

    @property
    def cache_read(self) -> int:
        return self.tokens - self.evaluated


@dataclass(frozen=True)
class _Saved:
    tokens: tuple[int, ...]  # the tokens in the KV cache
    batched: int  # how many leading ones were evaluated in batches (and may be reused)
    state: bytes


def caching_llama(**kwargs: Any) -> Any:
    """A llama_cpp.Llama whose prompts reuse the evaluated prefix, batch-invariantly (see the module docstring)."""
    from llama_cpp import Llama

    class CachingLlama(Llama):
        """Llama with batch-invariant prompt evaluation, prefix reuse across calls and conversations, and counts."""

        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.batched = 0  # leading KV tokens evaluated in batches of two or more
            self.uses: list[PromptUse] = []  # the prompts of the calls since clear_uses()
            self._prompt_end = 0
            self._evaluated = 0
            self._saved: OrderedDict[tuple[int, ...], _Saved] = OrderedDict()

        def clear_uses(self) -> None:
            self.uses = []

        def reset(self) -> None:
            super().reset()
            self.batched = 0

        def generate(self, tokens: Sequence[int], *args: Any, **kw: Any) -> Any:
            tokens = list(tokens)
            self.reuse(tokens)
            self._prompt_end, self._evaluated = len(tokens), 0
            inner = super().generate(tokens, *args, **kw)
            return self._count(inner, len(tokens))

        def _count(self, inner: Iterator[int], n_prompt: int) -> Iterator[int]:
            first = True
            try:
                for token in inner:
                    if first:
                        self.uses.append(PromptUse(n_prompt, self._evaluated))
                        first = False
                    yield token
            finally:
                if first:
                    self.uses.append(PromptUse(n_prompt, self._evaluated))
                self._prompt_end = 0

        def eval(self, tokens: Sequence[int]) -> None:
            tokens = list(tokens)
            start = self.n_tokens
            self.batched = min(self.batched, start)
            if len(tokens) == 1:
                super().eval(tokens)  # a generated token: computed alone, so never reused
            else:
                step = max(2, self.n_batch)
                i = 0
                while i < len(tokens):
                    size = min(step, len(tokens) - i)
                    if len(tokens) - i - size == 1:
                        size -= 1  # leave two for the last batch, never one
                    super().eval(tokens[i : i + size])
                    i += size
                if self.batched == start:
                    self.batched = self.n_tokens
            if start < self._prompt_end:
                self._evaluated += min(self.n_tokens, self._prompt_end) - start

        def forget(self) -> None:
            """Drop the KV cache and every saved state: the next prompt is evaluated from its first token."""
            self._saved.clear()
            self.reset()

        def reuse(self, prompt: list[int]) -> int:
            """Keep the longest reusable prefix of the KV cache for this prompt, from memory or a saved state.

            Returns how many tokens are kept; the rest of the prompt (never fewer than two) is evaluated next.
            """
            keep = self._keepable(prompt)
            best = max(self._saved.values(), key=lambda s: longest_prefix(s.tokens[: s.batched], prompt), default=None)
            if best is not None and min(longest_prefix(best.tokens[: best.batched], prompt), len(prompt) - 2) > keep:
                # out of reach of _save()'s eviction: the state about to be loaded must not be the one dropped
                del self._saved[best.tokens]
                self._save()
                self._load(best)
                keep = self._keepable(prompt)
            elif self.batched - keep > SAVE_AFTER_TOKENS:
                self._save()
            if keep < self.n_tokens:
                self._ctx.kv_cache_seq_rm(-1, keep, -1)
                self.n_tokens = keep
                self._requires_eval = True
            self.batched = min(self.batched, keep)
            return keep

        def _keepable(self, prompt: list[int]) -> int:
            common = longest_prefix(self.input_ids[: self.n_tokens].tolist(), prompt)
            return max(0, min(common, self.batched, len(prompt) - 2))

        def _save(self) -> None:
            import llama_cpp

            tokens = tuple(self.input_ids[: self.n_tokens].tolist())
            if not self.batched or tokens in self._saved:
                return
            size = llama_cpp.llama_state_get_size(self._ctx.ctx)
            buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size)
            self._keep_saved(_Saved(tokens, self.batched, bytes(buffer[:written])))

        def _keep_saved(self, saved: _Saved) -> None:
            """Keep a saved state as the newest, dropping the oldest others while they take more than the budget."""
            self._saved.pop(saved.tokens, None)
            self._saved[saved.tokens] = saved
            while sum(len(s.state) for s in self._saved.values()) > SAVED_STATE_BYTES and len(self._saved) > 1:
                self._saved.popitem(last=False)

        def _load(self, saved: _Saved) -> None:
            """Restore a saved state into the context, its tokens with it; it stays saved, as the newest."""
            import llama_cpp

            buffer = (ctypes.c_uint8 * len(saved.state)).from_buffer_copy(saved.state)
            if llama_cpp.llama_state_set_data(self._ctx.ctx, buffer, len(saved.state)) != len(saved.state):
                self._ctx.kv_cache_seq_rm(-1, 0, -1)  # whatever was restored in part is dropped with the rest
                self.reset()
                return
            # the bookkeeping follows the KV cache at once, before anything that could fail
            self.input_ids[: len(saved.tokens)] = saved.tokens
            self.n_tokens = len(saved.tokens)
            self.batched = saved.batched
            self._requires_eval = True
            self._keep_saved(saved)

    return CachingLlama(**kwargs)
