"""An OpenAI-compatible chat server on 127.0.0.1 whose replies are scripted policies, chosen by the request's model.

Model ``staller`` always answers ``[pass]`` (never a legal move), ``spammer`` answers filler text, ``first`` the
first action of the prompt's ``Legal actions:`` line and ``random`` a random one of them (seeded by the whole
conversation, so a rerun replies the same). It stands in for real models where a test needs known behaviour
through verifiers' real machinery (interception, harness program, traces).
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

POLICIES = ("staller", "spammer", "first", "random")


def legal_actions(messages: list[dict[str, Any]]) -> list[str]:
    """The actions listed on the last user message's ``Legal actions:`` line."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else " ".join(part.get("text", "") for part in content or [])
            for line in reversed(text.splitlines()):
                if line.startswith("Legal actions:"):
                    return [f"[{a}" for a in line[len("Legal actions:"):].strip().lstrip("[").split(" [") if a]
    return []


def reply_for(model: str, messages: list[dict[str, Any]]) -> str:
    """What policy ``model`` answers to this conversation."""
    if model == "staller":
        return "[pass]"
    if model == "spammer":
        return "I will think about this very carefully before deciding anything at all"
    legal = legal_actions(messages)
    if not legal:
        return "no legal actions were shown"
    if model == "first":
        return legal[0]
    if model == "random":
        seed = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
        return random.Random(seed).choice(legal)
    return f"unknown policy model {model!r}; use one of {POLICIES}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return None

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, model: str, content: str) -> None:
        """The reply as OpenAI's server-sent events: a role chunk, the content, the stop, usage, ``[DONE]``."""
        base = {"id": "chatcmpl-policy", "object": "chat.completion.chunk", "created": 0, "model": model}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                        "finish_reason": None}]},
                  {**base, "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]},
                  {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}]
        data = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks).encode() + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 -- http.server's name
        self._send(200, {"object": "list", "data": [{"id": p, "object": "model"} for p in POLICIES]})

    def do_POST(self) -> None:  # noqa: N802 -- http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        model = str(body.get("model"))
        content = reply_for(model, body.get("messages") or [])
        self.server.requests.append(body)  # type: ignore[attr-defined]
        if body.get("stream"):  # verifiers 0.4's interception proxy streams every call through
            self._stream(model, content)
            return
        self._send(200, {
            "id": "chatcmpl-policy", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })


class PolicyServer:
    """``with PolicyServer() as server:`` serves on a free port; ``server.base_url`` ends in ``/v1``."""

    def __enter__(self) -> PolicyServer:
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.requests = []  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        return self

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._http.requests  # type: ignore[attr-defined]

    def __exit__(self, *exc: Any) -> None:
        self._http.shutdown()
        self._http.server_close()
