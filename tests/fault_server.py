"""A scriptable fault-injection server speaking the OpenAI chat-completions JSON shape, for offline player tests."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Every way a reply can go wrong that the fault tests script; "ok" is the well-behaved answer.
KINDS = (
    "ok", "timeout", "stall", "drip", "status", "malformed", "empty_choices", "huge", "control_chars", "raw_control",
    "nested",
)


@dataclass(frozen=True)
class Reply:
    """How the server answers one request.

    ``status`` with ``retry_after`` scripts 429/500; ``timeout`` sleeps ``delay_s`` before answering;
    ``stall`` sends the headers and half the body, then sleeps ``delay_s``; ``drip`` sends the body one
    byte every ``delay_s`` (each gap shorter than a read timeout, the whole far longer);
    ``echo_auth`` puts the request's Authorization header in a status error's message (as some real APIs
    quote part of a bad key back), and in an ok reply's content, model id and finish reason and ``/models``' ids;
    ``huge`` sends ``size`` bytes of valid JSON; ``control_chars`` puts
    control characters in the content (escaped, so the JSON is valid); ``raw_control`` puts them raw in
    the body (invalid JSON); ``nested`` sends ``size`` opening brackets (deeper than any JSON parser recurses).
    ``template``, when set, replaces ``content``: it is formatted with the legal actions the request lists
    (``{0}``, ``{1}``, ...), so one scripted reply (a reasoning-style one, say) is legal in every game state.
    """

    kind: str = "ok"
    content: str = "[check]"
    model: str = "fault-model-2024"
    status: int = 200
    retry_after: str | None = None
    delay_s: float = 0.0
    size: int = 1_000_000
    echo_auth: bool = False
    template: str | None = None

    def text(self, body: Any) -> str:
        """The content to send in answer to the request ``body``."""
        if self.template is None:
            return self.content
        return self.template.format(*legal_actions(body))

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown reply kind {self.kind!r}; expected one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class SeenRequest:
    """One request as the server received it."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]
    time: float


def legal_actions(body: Any) -> list[str]:
    """The bracketed legal actions a player's request lists on its last ``Legal actions:`` line."""
    try:
        user = body["messages"][-1]["content"]
    except (KeyError, IndexError, TypeError):
        return []
    return re.findall(r"\[[^\]]*\]", user.rpartition("Legal actions:")[2])


def completion(content: str, model: str, **extra: Any) -> dict[str, Any]:
    """A well-formed chat-completion body."""
    body = {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    body.update(extra)
    return body


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a timeout, a capped read) resets the connection: expected here.
        return


class FaultServer:
    """An http.server on 127.0.0.1 (port 0) in a thread; each POST takes the next scripted Reply.

    When the script is empty the ``default`` reply is used. ``models_status`` sets the status of
    ``GET /v1/models`` (errors echo the Authorization header). ``requests`` records every request seen,
    so tests can count the real calls a player made.
    """

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply()
        self.models_status = 200
        self.models_body: bytes | None = None  # set: GET /v1/models answers 200 with exactly these bytes
        self.in_flight = self.max_in_flight = 0  # chat-completion requests being answered now, and at most at once
        self.requests: list[SeenRequest] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._script.extend(replies)

    def completions_seen(self) -> int:
        """How many chat-completion requests reached the server."""
        with self._lock:
            return sum(1 for r in self.requests if r.path.endswith("/chat/completions"))

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._script.popleft() if self._script else self.default

    def _record(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- keep test output quiet
                return

            def _send(
                self, status: int, payload: bytes, headers: dict[str, str] | None = None, *,
                piece: int | None = None, pause_s: float = 0.0,
            ) -> None:
                """Send ``payload`` whole, or in ``piece``-byte parts with ``pause_s`` between them."""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                step = piece or len(payload) or 1
                try:
                    for start in range(0, len(payload), step):
                        if start:
                            time.sleep(pause_s)
                        self.wfile.write(payload[start:start + step])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    # The client stopped reading (a capped reply or a timeout): that is the point.
                    self.close_connection = True

            def _headers(self) -> dict[str, str]:
                return {name.lower(): value for name, value in self.headers.items()}

            def do_GET(self) -> None:
                server._record(SeenRequest("GET", self.path, None, self._headers(), time.monotonic()))
                if server.models_status != 200:
                    error = {"error": {"message": f"bad key {self.headers.get('Authorization')}"}}
                    self._send(server.models_status, json.dumps(error).encode())
                elif server.models_body is not None:
                    self._send(200, server.models_body)
                elif self.path.rstrip("/").endswith("/v1/models"):
                    served = server.default.model
                    if server.default.echo_auth:
                        served = f"{served} {self.headers.get('Authorization', '')}"
                    models = {"object": "list", "data": [{"id": served, "object": "model"}]}
                    self._send(200, json.dumps(models).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                server._record(SeenRequest("POST", self.path, body, self._headers(), time.monotonic()))
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(server._next_reply(), body)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, reply: Reply, body: Any) -> None:
                if reply.kind == "timeout":
                    time.sleep(reply.delay_s)
                    self._send(200, json.dumps(completion(reply.content, reply.model)).encode())
                elif reply.kind == "stall":
                    body = json.dumps(completion(reply.content, reply.model)).encode()
                    self._send(200, body, piece=len(body) // 2 + 1, pause_s=reply.delay_s)
                elif reply.kind == "drip":
                    body = json.dumps(completion(reply.content, reply.model)).encode()
                    self._send(200, body, piece=1, pause_s=reply.delay_s)
                elif reply.kind == "status":
                    headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
                    auth = self.headers.get("Authorization") if reply.echo_auth else ""
                    error = {"error": {"message": f"scripted HTTP {reply.status} {auth}", "type": "fault"}}
                    self._send(reply.status, json.dumps(error).encode(), headers)
                elif reply.kind == "malformed":
                    self._send(200, b'{"id": "chatcmpl-fault", "choices": [{"message": {"content": "[che')
                elif reply.kind == "empty_choices":
                    self._send(200, json.dumps(completion("", reply.model, choices=[])).encode())
                elif reply.kind == "huge":
                    filler = "x" * reply.size
                    self._send(200, json.dumps(completion(filler, reply.model)).encode())
                elif reply.kind == "control_chars":
                    self._send(200, json.dumps(completion(reply.content, reply.model)).encode())
                elif reply.kind == "nested":
                    self._send(200, b"[" * reply.size)
                elif reply.kind == "raw_control":
                    body = json.dumps(completion("CONTROL", reply.model)).encode()
                    self._send(200, body.replace(b"CONTROL", b"\x00\x07\x1b[bet]"))
                elif reply.echo_auth:
                    auth = self.headers.get("Authorization", "")
                    answer = completion(f"{reply.text(body)} {auth}", f"{reply.model} {auth}")
                    answer["choices"][0]["finish_reason"] = f"stop {auth}"
                    self._send(200, json.dumps(answer).encode())
                else:
                    self._send(200, json.dumps(completion(reply.text(body), reply.model)).encode())

        return Handler


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 whose port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
