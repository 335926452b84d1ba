"""The frontier player: a model behind any OpenAI-compatible chat-completions endpoint, cached and call-capped.

Spec ``openai:MODEL@BASE_URL``. Every real HTTP attempt (retries included) counts against
``max_calls``; the client's own retries are off so that count is exact. Good responses are stored in
a content-addressed, append-only cache (one file per request digest) so a rerun costs no calls.
Failures (endpoint down, timeouts, HTTP errors, malformed or oversized replies, cap reached) come back
as ``Decision(action="", error=...)``, never as exceptions. The API key is read from the environment
at construction, handed to the HTTP client and never written anywhere else.
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import logging
import os
import re
import time
import unicodedata
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import openai

from arena.core.artifacts import atomic_write_json
from arena.core.hashing import digest_config
from arena.core.paths import cache_dir
from arena.games.base import Observation
from arena.players.base import Decision, Player
from arena.players.config import FrontierConfig
from arena.players.specs import SPEC_PREFIX, FrontierError, normalise_base_url, parse_spec

log = logging.getLogger(__name__)

# A reply body larger than this is refused unread. An answer of at most MAX_MAX_TOKENS tokens is at
# most ~16 KiB of text (a few bytes a token), ~100 KiB even if every character were JSON-escaped
# unicode, so 256 KiB leaves room for any honest reply while a runaway 1 MB body is cut off.
MAX_REPLY_BYTES = 256 * 1024

# The longest free-text reply passed on to the game as an (invalid) action, and the longest model id kept.
MAX_ACTION_CHARS = 200
MAX_MODEL_ID_CHARS = 200
# Sent when the key's environment variable is unset: local servers ignore it, remote ones answer 401.
DUMMY_KEY = "sk-no-key"
# Bumped whenever the request or the cached record changes shape, so old entries are never misread.
CACHE_FORMAT = 1
PROMPT_FORMAT = 1
RETRYABLE_STATUS = frozenset({408, 409, 429})




def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class FrontierStats:
    """What one player instance spent: real completion attempts, cache hits, errored decisions, endpoint checks."""

    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    checks: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Reply:
    """The part of a chat completion arena keeps: the server's model id, the text, why it stopped."""

    model: str | None
    content: str
    finish_reason: str | None


class AttemptFailed(Exception):
    """One real attempt failed; ``reason`` is a short text built here, never from server text or the key."""

    def __init__(self, reason: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after


def sanitise(text: str, limit: int) -> str:
    """Control and format characters (escapes, NULs, bidi overrides) become spaces, whitespace runs collapse,
    ends are trimmed, at most ``limit`` characters remain."""
    cleaned = "".join(" " if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)
    return " ".join(cleaned.split())[:limit]


def _utf8(text: str) -> str:
    """``text`` with lone surrogates (legal in JSON escapes, unencodable in UTF-8) replaced by '?'."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _earliest(haystack: str, needles: Sequence[tuple[str, str]]) -> str | None:
    """The action whose pattern occurs first in ``haystack`` (the longest pattern wins a tie)."""
    best: tuple[int, int, str] | None = None
    for pattern, action in needles:
        match = re.search(pattern, haystack)
        if match is None:
            continue
        candidate = (match.start(), -(match.end() - match.start()), action)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    return best[2] if best else None


def parse_action(reply: str, legal_actions: Sequence[str]) -> str:
    """The legal action a free-text reply names, else the reply itself, sanitised, for the game to reject.

    Tries in order: an exact legal action string; the same, ignoring case; the bare token inside a
    legal action's brackets as a whole word, ignoring case (``I bet`` -> ``[bet]``). Within each pass
    the earliest occurrence wins.
    """
    exact = [(re.escape(a), a) for a in legal_actions if a]
    folded = [(f"(?i){re.escape(a)}", a) for a in legal_actions if a]
    tokens = [
        (rf"(?i)(?<!\w){re.escape(a[1:-1].strip())}(?!\w)", a)
        for a in legal_actions
        if len(a) > 2 and a.startswith("[") and a.endswith("]") and a[1:-1].strip()
    ]
    for needles in (exact, folded, tokens):
        found = _earliest(reply, needles)
        if found is not None:
            return found
    return sanitise(reply, MAX_ACTION_CHARS)


def parse_retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms``, ``retry-after`` seconds or HTTP date), else None."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(when.timestamp() - current, 0.0)


def retry_delay(retry_index: int, retry_after: float | None, config: FrontierConfig) -> float:
    """Seconds before retry ``retry_index`` (0-based): exponential backoff, at least Retry-After, at most max_wait_s."""
    backoff = config.backoff_s * (2**retry_index)
    wait = backoff if retry_after is None else max(backoff, retry_after)
    return min(wait, config.max_wait_s)


def parse_reply(body: bytes) -> Reply:
    """Validate a chat-completion body's shape; raise AttemptFailed naming what is wrong."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        # json.loads is strict: raw control characters inside strings are malformed JSON too; deeply
        # nested arrays exhaust the parser's recursion limit.
        raise AttemptFailed("malformed JSON reply", retryable=True) from None
    if not isinstance(data, dict):
        raise AttemptFailed("reply is not a JSON object", retryable=True)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise AttemptFailed("reply has no choices", retryable=True)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise AttemptFailed("reply's first choice has no message", retryable=True)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise AttemptFailed("reply's message content is not text", retryable=True)
    model = sanitise(_utf8(data["model"]), MAX_MODEL_ID_CHARS) if isinstance(data.get("model"), str) else ""
    finish = choice.get("finish_reason")
    return Reply(
        model=model or None,
        content=_utf8(content or ""),
        finish_reason=sanitise(_utf8(finish), MAX_MODEL_ID_CHARS) if isinstance(finish, str) else None,
    )


class ResponseCache:
    """Append-only, content-addressed store of good replies: ``<root>/<key[:2]>/<key>.json``, never rewritten."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir() / "frontier"

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, request: dict[str, Any]) -> Reply | None:
        """The stored reply for ``request``, or None when absent or unreadable (a warning says which file)."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if record["format"] != CACHE_FORMAT or record["request"] != request:
                raise ValueError("record does not match its request")
            response = record["response"]
            model = response["model"]
            content = response["content"]
            finish = response["finish_reason"]
            if not isinstance(content, str) or not all(isinstance(v, (str, type(None))) for v in (model, finish)):
                raise ValueError("record has the wrong types")
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("ignoring unreadable frontier cache entry %s (%s); delete it to cache this request again",
                        path, type(error).__name__)
            return None
        return Reply(model=model, content=content, finish_reason=finish)

    def put(self, key: str, request: dict[str, Any], reply: Reply) -> None:
        """Store ``reply`` unless an entry for ``key`` exists: written atomically, then linked into place."""
        path = self.path(key)
        if path.exists():
            return
        record = {"format": CACHE_FORMAT, "key": key, "request": request, "response": asdict(reply)}
        # Write a private temporary file atomically, then hard-link it: link() refuses to replace an
        # existing entry, so a concurrent writer of the same key can never overwrite another's reply.
        tmp = path.with_name(f".{key}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        atomic_write_json(tmp, record)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)


class FrontierPlayer(Player):
    """A model behind an OpenAI-compatible endpoint, with a response cache, a call cap and bounded retries."""

    def __init__(
        self,
        model: str,
        base_url: str,
        config: FrontierConfig | None = None,
        *,
        cache: ResponseCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model or model != model.strip():
            raise FrontierError(f"frontier model name {model!r} must be non-empty without surrounding spaces")
        self.model = model
        self.base_url = normalise_base_url(base_url)
        self.config = config or FrontierConfig()
        self.spec = f"{SPEC_PREFIX}{model}@{self.base_url}"
        self.stats = FrontierStats()
        self.served_model: str | None = None
        self._cache = cache or ResponseCache()
        self._sleep = sleep
        self._client = openai.OpenAI(
            api_key=self._api_key(),
            base_url=self.base_url,
            timeout=self.config.timeout_s,
            max_retries=0,  # arena retries itself so every real attempt is counted against max_calls
        )

    def _api_key(self) -> str:
        key = os.environ.get(self.config.api_key_env)
        if not key:
            return DUMMY_KEY
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme != "https" and not _is_loopback(parts.hostname or ""):
            raise FrontierError(
                f"refusing to send ${self.config.api_key_env} in clear text to {self.base_url}: use https, or "
                "point frontier.api_key_env at an unset variable if that server needs no key"
            )
        return key

    @classmethod
    def from_spec(cls, spec: str, config: FrontierConfig | None = None) -> FrontierPlayer:
        """Build a player from ``openai:MODEL@BASE_URL``."""
        model, base_url = parse_spec(spec)
        return cls(model, base_url, config)

    def request_config(self) -> dict[str, Any]:
        """Everything besides the observation that shapes a reply (never the key, timeouts or caps)."""
        c = self.config
        return {
            "prompt_format": PROMPT_FORMAT,
            "system_prompt": c.system_prompt,
            "view": c.view,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "seed": c.seed,
        }

    def pin(self) -> dict[str, Any]:
        """What results are pinned to: endpoint, requested model, request config. Fixed for the player's life:
        a tournament requires one pin per spec across all its cards, so the model id the server reports
        (known only after a reply) is kept in ``served_model`` and in each decision's ``model_id`` instead."""
        return {
            "kind": "frontier",
            "endpoint": self.base_url,
            "model": self.model,
            "config_hash": digest_config(self.request_config()),
        }

    def messages(self, observation: Observation) -> list[dict[str, str]]:
        """The chat messages for one decision: the rules, then the chosen view and the legal actions."""
        view = observation.compact if self.config.view == "compact" else observation.text
        user = f"{view.rstrip()}\n\nLegal actions: {' '.join(observation.legal_actions)}"
        return [{"role": "system", "content": self.config.system_prompt}, {"role": "user", "content": user}]

    def request(self, observation: Observation) -> dict[str, Any]:
        """The canonical request for one decision: what is sent (bar the key) and what the cache key hashes."""
        seed = int(digest_config([self.config.seed, observation.sample_key])[:8], 16) & 0x7FFFFFFF
        return {
            "cache_format": CACHE_FORMAT,
            "base_url": self.base_url,
            "model": self.model,
            "messages": self.messages(observation),
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": seed,
        }

    def act(self, observation: Observation) -> Decision:
        request = self.request(observation)
        key = digest_config(request)
        reply = self._cache.get(key, request)
        if reply is not None:
            self.stats.cache_hits += 1
        else:
            try:
                reply = self._fetch(request)
            except AttemptFailed as failure:
                self.stats.errors += 1
                return Decision(action="", error=failure.reason)
            try:
                self._cache.put(key, request, reply)
            except OSError as error:
                # The reply was paid for and is good: play it; only a rerun loses (it calls again).
                log.warning("%s: could not cache a reply (%s: %s)", self.spec, type(error).__name__, error)
        self._note_served(reply.model)
        return Decision(action=parse_action(reply.content, observation.legal_actions), model_id=reply.model)

    def _note_served(self, model: str | None) -> None:
        if model is None:
            return
        if self.served_model is None:
            self.served_model = model
        elif model != self.served_model:
            log.warning("%s: the server now reports model %r (first reported %r)", self.spec, model, self.served_model)

    def _fetch(self, request: dict[str, Any]) -> Reply:
        """Real attempts until one succeeds, a failure is not retryable, retries run out or the cap is hit."""
        failure: AttemptFailed | None = None
        for attempt in range(self.config.max_retries + 1):
            if self.stats.calls >= self.config.max_calls:
                after = f" after {failure.reason}" if failure else ""
                raise AttemptFailed(f"call cap reached (max_calls={self.config.max_calls}){after}", retryable=False)
            if failure is not None:
                self._sleep(retry_delay(attempt - 1, failure.retry_after, self.config))
            self.stats.calls += 1
            try:
                return self._attempt(request)
            except AttemptFailed as error:
                failure = error
                log.warning("%s: attempt %d/%d failed: %s", self.spec, attempt + 1, self.config.max_retries + 1,
                            error.reason)
                if not error.retryable:
                    break
        assert failure is not None  # the loop runs at least once and leaves only through a failure here
        tries = attempt + 1
        raise AttemptFailed(f"{failure.reason} (after {tries} attempt{'s' if tries > 1 else ''})", retryable=False)

    def _attempt(self, request: dict[str, Any]) -> Reply:
        """One real HTTP request; the body is read only up to MAX_REPLY_BYTES."""
        timeout = self.config.timeout_s
        try:
            with self._client.chat.completions.with_streaming_response.create(
                model=request["model"],
                messages=request["messages"],
                temperature=request["temperature"],
                max_tokens=request["max_tokens"],
                seed=request["seed"],
            ) as response:
                body = _read_capped(response.iter_bytes(), time.monotonic() + timeout)
        except openai.APITimeoutError:
            raise AttemptFailed(f"timed out after {timeout:g} s", retryable=True) from None
        except openai.APIConnectionError:
            raise AttemptFailed(f"cannot connect to {self.base_url}", retryable=True) from None
        except openai.APIStatusError as error:
            status = error.status_code
            retryable = status in RETRYABLE_STATUS or status >= 500
            raise AttemptFailed(f"HTTP {status}", retryable=retryable,
                                retry_after=parse_retry_after(error.response.headers)) from None
        except httpx2.TimeoutException:
            raise AttemptFailed(f"timed out reading the reply after {timeout:g} s", retryable=True) from None
        except httpx2.RequestError:
            raise AttemptFailed("connection lost while reading the reply", retryable=True) from None
        return parse_reply(body)

    def check_endpoint(self) -> list[str]:
        """GET ``/models`` once; return the model ids served, or raise FrontierError naming the URL and the fix.

        Counted in ``stats.checks``, not against ``max_calls`` (it generates nothing), so a cache-only
        replay (``max_calls=0``) can still check its endpoint.
        """
        url = f"{self.base_url}/models"
        self.stats.checks += 1
        try:
            page = self._client.models.list()
        except openai.APIConnectionError as error:
            what = "timed out" if isinstance(error, openai.APITimeoutError) else "connection failed"
            raise FrontierError(
                f"cannot reach {url} ({what}): start the server or fix BASE_URL in openai:MODEL@BASE_URL"
            ) from None
        except openai.APIStatusError as error:
            if error.status_code in (401, 403):
                raise FrontierError(
                    f"{url} refused the API key (HTTP {error.status_code}): set ${self.config.api_key_env} "
                    "to a valid key"
                ) from None
            raise FrontierError(
                f"{url} answered HTTP {error.status_code}: check BASE_URL (it usually ends in /v1)"
            ) from None
        except openai.OpenAIError:
            raise FrontierError(f"{url} did not answer with a model list: check BASE_URL") from None
        return [str(model.id) for model in page.data]


def _read_capped(chunks: Any, deadline: float) -> bytes:
    """Join a body's chunks; fail past MAX_REPLY_BYTES or the deadline (a server dripping bytes forever)."""
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > MAX_REPLY_BYTES:
            raise AttemptFailed(f"reply larger than {MAX_REPLY_BYTES} bytes", retryable=True)
        if time.monotonic() > deadline:
            raise AttemptFailed("reply body too slow", retryable=True)
    return bytes(body)
