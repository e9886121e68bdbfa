"""A real OpenAI-compatible HTTP server on 127.0.0.1, for tests and benchmarks.

It speaks just enough of ``POST /v1/chat/completions`` (and ``POST /v1/embeddings``, with vectors
from a function of the text, in ``float`` or ``base64`` encoding) for the official ``openai`` client: the
replies come from a script (a queue of :class:`Reply`, or a function of the request) and can
misbehave on purpose — latency, 429 with Retry-After, 500, a timeout, a dropped connection,
prose instead of JSON, a refusal, a truncated answer, tool calls. Quirk modes make it behave like a
small local server: no json_schema, no tools, strict schemas refused, a 400 for a parameter it does
not know, reasoning blocks or a code fence around every answer, and a prompt over its context cut
silently (Ollama's default) so the model sees no instructions. Every request is recorded (body,
headers, timing, the status answered) so tests can assert prompts, call counts, refused calls and
the peak concurrency.

Only the standard library is used so ``bench/`` can run it without test dependencies.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TRUNCATED = '{"experiences": [{"experience_name": "x", "content": "## Sit'


@dataclass
class Reply:
    """One scripted answer. The constructors below name the misbehaviours."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    usage: tuple[int, int] | None = None

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        return cls(content=text, **kw)

    @classmethod
    def rate_limited(cls, retry_after: str | None = None, **kw: Any) -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(status=429, error="Rate limit reached, slow down", headers=headers, **kw)

    @classmethod
    def server_error(cls, status: int = 500, **kw: Any) -> Reply:
        return cls(status=status, error="The server had an error while processing your request", **kw)

    @classmethod
    def bad_request(cls, message: str, param: str | None = None) -> Reply:
        return cls(status=400, error=message, headers={"X-Param": param} if param else {})

    @classmethod
    def hang(cls, seconds: float, **kw: Any) -> Reply:
        """Sleep longer than the client's timeout, then answer (nobody is listening any more)."""
        return cls(content="{}", delay=seconds, **kw)

    @classmethod
    def dropped(cls, **kw: Any) -> Reply:
        return cls(drop=True, **kw)

    @classmethod
    def refused(cls, text: str = "I'm sorry, but I can't help with that.", **kw: Any) -> Reply:
        return cls(content=None, refusal=text, **kw)

    @classmethod
    def truncated(cls, partial: str = TRUNCATED, **kw: Any) -> Reply:
        return cls(content=partial, finish_reason="length", **kw)

    @classmethod
    def tools(cls, *calls: tuple[str, dict[str, Any]]) -> Reply:
        """Native tool calls: ``Reply.tools(("read", {"uri": ...}), ("ls", {...}))``."""
        tool_calls = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls, start=1)
        ]
        return cls(content=None, tool_calls=tool_calls, finish_reason="tool_calls")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    started: float
    finished: float = 0.0
    status: int = 200

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def prompt_text(self) -> str:
        """All message contents joined: for asserting what the model was shown."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)

    @property
    def schema_name(self) -> str | None:
        fmt = self.body.get("response_format") or {}
        return (fmt.get("json_schema") or {}).get("name")

    @property
    def response_format_type(self) -> str | None:
        return (self.body.get("response_format") or {}).get("type")


Responder = Callable[[RecordedRequest], Reply]
EmbedText = Callable[[str], list[float]]


def estimate_tokens(text: str) -> int:
    """A stable stand-in for a tokenizer: about four characters per token."""
    return max(1, len(text) // 4)


class FakeOpenAIServer:
    """``with FakeOpenAIServer(replies) as server: LLMConfig(base_url=server.base_url, ...)``."""

    def __init__(
        self,
        script: Iterable[Reply] | Responder | None = None,
        *,
        latency: float = 0.0,
        supports_json_schema: bool = True,
        supports_json_object: bool = True,
        supports_tools: bool = True,
        embed: EmbedText | None = None,
    ) -> None:
        self.latency = latency
        self.embed = embed  # the vector of one text (None: the server has no embeddings route)
        self.embeddings_down = False  # answer embeddings with 503 (an endpoint that went away)
        self.supports_json_schema = supports_json_schema
        self.supports_json_object = supports_json_object
        self.supports_tools = supports_tools
        self.context_window: int | None = None  # reported in GET /models as vLLM does (max_model_len)
        # Quirk modes of small local servers (see the module's docstring).
        self.supports_strict = True
        self.unknown_params: set[str] = set()  # answered with a 400 "Unrecognized request argument"
        self.think_blocks = False  # every answer starts with a <think>…</think> block
        self.fenced_json = False  # every answer comes in a ```json fence
        self.prompt_limit: int | None = None  # a longer prompt is cut silently: the answer is empty
        self.cut_prompts = 0
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.open_connections = 0  # kept alive by clients now (a closed client closes its own)
        self._connections = threading.Condition()
        self._responder: Responder | None = script if callable(script) else None
        self._queue: deque[Reply] = deque([] if script is None or callable(script) else script)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- script ---
    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def respond_with(self, responder: Responder) -> None:
        self._responder = responder

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def refused_requests(self) -> list[RecordedRequest]:
        """Chat requests answered with a 4xx: each one a call paid for nothing."""
        return [r for r in self.chat_requests if 400 <= r.status < 500]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    @property
    def embedded_texts(self) -> list[str]:
        """Every text sent to be embedded, in order."""
        return [text for r in self.embedding_requests for text in _inputs(r.body)]

    # --- lifecycle ---
    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers that simulate latency or a hang
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_for_open_connections(self, count: int, timeout: float = 10.0) -> bool:
        """Whether the clients' open connections came down to ``count`` within ``timeout``."""
        with self._connections:
            return self._connections.wait_for(lambda: self.open_connections <= count, timeout)

    def _connection_opened(self) -> None:
        with self._connections:
            self.open_connections += 1

    def _connection_closed(self) -> None:
        with self._connections:
            self.open_connections -= 1
            self._connections.notify_all()

    # --- request handling (runs in the server's threads) ---
    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self._responder is not None:
            return self._responder(request)
        return Reply.bad_request("fake server: the script has no reply left for this request")

    def _capability_error(self, body: dict[str, Any]) -> Reply | None:
        kind = (body.get("response_format") or {}).get("type")
        if kind == "json_schema" and not self.supports_json_schema:
            return Reply.bad_request("response_format type 'json_schema' is not supported", "response_format")
        if kind == "json_object" and not self.supports_json_object:
            return Reply.bad_request("response_format type 'json_object' is not supported", "response_format")
        if body.get("tools") and not self.supports_tools:
            return Reply.bad_request("this model does not support tools", "tools")
        strict = kind == "json_schema" and body["response_format"].get("json_schema", {}).get("strict")
        if strict and not self.supports_strict:
            return Reply.bad_request("strict mode is not supported for json_schema", "response_format")
        unknown = sorted(self.unknown_params & body.keys())
        if unknown:
            return Reply.bad_request(f"Unrecognized request argument supplied: {unknown[0]}", unknown[0])
        return None

    def _quirky(self, request: RecordedRequest, reply: Reply) -> Reply:
        """``reply`` as a small local server would give it, in the quirk modes that are on."""
        if self.prompt_limit is not None and estimate_tokens(request.prompt_text) > self.prompt_limit:
            with self._lock:
                self.cut_prompts += 1
            return Reply.text("{}")  # the instructions were cut away: nothing comes out
        content = reply.content
        if content is not None and self.fenced_json:
            content = f"```json\n{content}\n```"
        if content is not None and self.think_blocks:
            content = f"<think>The user wants JSON; maybe {{}} will do? No.</think>\n{content}"
        return replace(reply, content=content)

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, Nagle + delayed ACK add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fake._connection_opened()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.fake._connection_closed()

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model: dict[str, Any] = {"id": "fake-model", "object": "model"}
            if self.fake.context_window is not None:
                model["max_model_len"] = self.fake.context_window
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}  # header names are case-insensitive
        request = RecordedRequest("POST", self.path, headers, body, time.monotonic())
        with fake._lock:
            fake.requests.append(request)
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            self._answer(request)
        finally:
            request.finished = time.monotonic()
            with fake._lock:
                fake.in_flight -= 1

    def _answer(self, request: RecordedRequest) -> None:
        fake = self.fake
        if request.path.endswith("/embeddings") and fake.embed is not None:
            self._embeddings(request)
            return
        if not request.path.endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {request.path}", "type": "not_found"}})
            return
        reply = fake._capability_error(request.body) or fake._quirky(request, fake._next_reply(request))
        request.status = reply.status
        fake._wait(fake.latency + reply.delay)
        if reply.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.status != 200:
            error = {"message": reply.error, "type": "fake_error", "param": reply.headers.get("X-Param")}
            self._send_json(reply.status, {"error": error}, reply.headers)
            return
        self._send_json(200, self._completion(request, reply), reply.headers)

    def _embeddings(self, request: RecordedRequest) -> None:
        fake = self.fake
        assert fake.embed is not None
        if fake.embeddings_down:
            self._send_json(503, {"error": {"message": "embeddings are down", "type": "fake_error"}})
            return
        texts = _inputs(request.body)
        encoding = request.body.get("encoding_format", "float")
        data = []
        for index, text in enumerate(texts):
            vector = fake.embed(text)
            if encoding == "base64":
                value: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            else:
                value = vector
            data.append({"object": "embedding", "index": index, "embedding": value})
        tokens = sum(estimate_tokens(t) for t in texts)
        model = request.body.get("model", "fake-embedder")
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _completion(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        if reply.usage is not None:
            prompt, completion = reply.usage
        else:
            answer = (reply.content or "") + (reply.refusal or "") + json.dumps(reply.tool_calls or "")
            # The response format and the tools are billed as prompt tokens too.
            billed = [request.messages, request.body.get("response_format"), request.body.get("tools")]
            prompt, completion = estimate_tokens(json.dumps(billed)), estimate_tokens(answer)
        return {
            "id": f"chatcmpl-fake-{len(self.fake.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.body.get("model", "fake-model"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                if key != "X-Param":
                    self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout test): nothing to answer
            self.close_connection = True


def _inputs(body: dict[str, Any]) -> list[str]:
    given = body.get("input", [])
    return [given] if isinstance(given, str) else [str(t) for t in given]
