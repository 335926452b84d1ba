"""The frontier player: a model behind any OpenAI-compatible chat-completions endpoint, cached and call-capped.

Spec ``openai:MODEL@BASE_URL``. Every real HTTP attempt (retries included) counts against
``max_calls``; the client's own retries are off so that count is exact. Good responses are stored in
a content-addressed, append-only cache (one file per request digest) so a rerun costs no calls.
Failures (endpoint down, timeouts, HTTP errors, malformed or oversized replies, cap reached) come back
as ``Decision(action="", error=...)``, never as exceptions. The API key is read from the environment
at construction, handed to the HTTP client and never written anywhere else. A reply's text is read by
``arena.players.frontier_reply`` (its final answer is played) and cached by ``arena.players.frontier_cache``.
"""

from __future__ import annotations

import email.utils
import ipaddress
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai

from arena.core.hashing import digest_config
from arena.games.base import Observation
from arena.players.base import Decision, Player
from arena.players.config import LOCAL_CONCURRENCY, REMOTE_CONCURRENCY, FrontierConfig
from arena.players.frontier_cache import CACHE_FORMAT, ResponseCache
from arena.players.frontier_reply import AttemptFailed, Reply, parse_action, parse_reply, scrub, scrub_reply
from arena.players.specs import SPEC_PREFIX, FrontierError, check_model_name, normalise_base_url, parse_spec

log = logging.getLogger(__name__)


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, request errors) of the HTTP libraries openai may run on while a body streams: httpx2 under
    openai 3, httpx under openai 2 (verifiers 0.4.0's). arena needs nothing else of openai 3: the client, its
    streaming chat completions, ``models.list`` and the error classes are the same in both."""
    timeouts: list[type[BaseException]] = []
    requests: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            library = __import__(name)
        except ImportError:
            continue
        timeouts.append(library.TimeoutException)
        requests.append(library.RequestError)
    return tuple(timeouts), tuple(requests)


TRANSPORT_TIMEOUTS, TRANSPORT_ERRORS = _transport_errors()

# A reply body larger than this is refused unread. An answer of at most MAX_MAX_TOKENS tokens is at
# most ~16 KiB of text (a few bytes a token), ~100 KiB even if every character were JSON-escaped
# unicode, so 256 KiB leaves room for any honest reply while a runaway 1 MB body is cut off.
MAX_REPLY_BYTES = 256 * 1024

# Sent when the key's environment variable is unset: local servers ignore it, remote ones answer 401.
DUMMY_KEY = "sk-no-key"
# Part of every pin: bumped whenever how a request is built or a reply is read changes, so results pinned
# to one way of playing are never mixed with another's. 2: the reply's final answer is played (its last
# <answer> tag, else the last legal action it names), not the first legal action it names. Requests are
# unchanged, so replies cached under CACHE_FORMAT 1 still serve.
PROMPT_FORMAT = 2
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


class FrontierPlayer(Player):
    """A model behind an OpenAI-compatible endpoint, with a response cache, a call cap and bounded retries."""

    writes_text = True

    def __init__(
        self,
        model: str,
        base_url: str,
        config: FrontierConfig | None = None,
        *,
        cache: ResponseCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = check_model_name(model)
        self.base_url = normalise_base_url(base_url)
        self.config = config or FrontierConfig()
        self.spec = f"{SPEC_PREFIX}{model}@{self.base_url}"
        self.stats = FrontierStats()
        self.served_model: str | None = None
        self._cache = cache or ResponseCache(Path(self.config.replies) if self.config.replies else None)
        self._sleep = sleep
        key = self._api_key()
        # An endpoint may echo the key back (in a reply's text, its model id, /models): every reply is scrubbed
        # of it where it enters arena (parse_reply, the cache's entries), so it never reaches disk or logs.
        self._secrets = (key,) if key != DUMMY_KEY else ()
        self._lock = threading.Lock()  # stats, across the threads of one act_batch
        self._client = openai.OpenAI(
            api_key=key,
            base_url=self.base_url,
            timeout=self.config.timeout_s,
            max_retries=0,  # arena retries itself so every real attempt is counted against max_calls
            # A redirect is refused, never followed: the pin names one endpoint, and a reply from another
            # host or port would be scored (and cached) as that endpoint's.
            http_client=openai.DefaultHttpxClient(follow_redirects=False, timeout=self.config.timeout_s),
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
            # Its reply budget in plain sight (a thinking local player's pin states its own): a comparison says both.
            "think": {"max_tokens": self.config.max_tokens, "temperature": self.config.temperature},
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

    @property
    def concurrency(self) -> int:
        """Requests in flight at once: ``frontier.concurrency``, else by where the endpoint is (see config.py)."""
        if self.config.concurrency is not None:
            return self.config.concurrency
        local = _is_loopback(urllib.parse.urlsplit(self.base_url).hostname or "")
        return LOCAL_CONCURRENCY if local else REMOTE_CONCURRENCY

    def act_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        """Each observation's decision, in order, up to ``concurrency`` requests in flight.

        Decisions run together only in runs whose every attempt fits under ``max_calls`` (each counted at
        ``max_retries + 1``), the rest one by one: each decision gets the attempts it would get asked in order,
        so records, call counts and which decision meets the cap are those of asking one at a time.
        """
        out: list[Decision] = []
        while len(out) < len(observations):
            rest = observations[len(out):]
            room = (self.config.max_calls - self.stats.calls) // (self.config.max_retries + 1)
            run = min(room, len(rest))
            if self.concurrency < 2 or run < 2:
                out.append(self.act(rest[0]))
                continue
            with ThreadPoolExecutor(min(self.concurrency, run), thread_name_prefix="arena-frontier") as pool:
                out.extend(pool.map(self.act, rest[:run]))
        return out

    def act(self, observation: Observation) -> Decision:
        request = self.request(observation)
        key = digest_config(request)
        reply = self._cache.get(key, request)
        if reply is not None:
            reply = scrub_reply(reply, self._secrets)  # an entry written before replies were scrubbed
            with self._lock:
                self.stats.cache_hits += 1
        else:
            try:
                reply = self._fetch(request)
            except AttemptFailed as failure:
                with self._lock:
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
            if model != self.model:
                log.warning("%s: the server answers as model %s, not the requested %s; score cards record the "
                            "served ids (players[].served_models)", self.spec, ascii(model), ascii(self.model))
        elif model != self.served_model:
            log.warning("%s: the server now reports model %r (first reported %r)", self.spec, model, self.served_model)

    def _fetch(self, request: dict[str, Any]) -> Reply:
        """Real attempts until one succeeds, a failure is not retryable, retries run out or the cap is hit."""
        failure: AttemptFailed | None = None
        for attempt in range(self.config.max_retries + 1):
            with self._lock:
                capped = self.stats.calls >= self.config.max_calls
                self.stats.calls += not capped
            if capped:
                after = f" after {failure.reason}" if failure else ""
                raise AttemptFailed(f"call cap reached (max_calls={self.config.max_calls}){after}", retryable=False)
            if failure is not None:
                self._sleep(retry_delay(attempt - 1, failure.retry_after, self.config))
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
            if 300 <= status < 400:
                raise AttemptFailed(redirect_refusal(status, error.response.headers), retryable=False) from None
            retryable = status in RETRYABLE_STATUS or status >= 500
            raise AttemptFailed(f"HTTP {status}", retryable=retryable,
                                retry_after=parse_retry_after(error.response.headers)) from None
        except TRANSPORT_TIMEOUTS:
            raise AttemptFailed(f"timed out reading the reply after {timeout:g} s", retryable=True) from None
        except TRANSPORT_ERRORS:
            raise AttemptFailed("connection lost while reading the reply", retryable=True) from None
        return parse_reply(body, self._secrets)

    def check_endpoint(self) -> list[str]:
        """GET ``/models`` once; return the model ids served, or raise FrontierError naming the URL and the fix.

        Counted in ``stats.checks``, not against ``max_calls`` (it generates nothing). ``make_player`` skips it
        for a cache-only replay (``max_calls=0``), which needs no server.
        """
        url = f"{self.base_url}/models"
        self.stats.checks += 1
        try:
            return [scrub(str(model.id), self._secrets) for model in self._client.models.list().data]
        except openai.APIConnectionError as error:
            what = "timed out" if isinstance(error, openai.APITimeoutError) else "connection failed"
            raise FrontierError(
                f"cannot reach {url} ({what}): start the server or fix BASE_URL in openai:MODEL@BASE_URL"
            ) from None
        except openai.APIStatusError as error:
            if 300 <= error.status_code < 400:
                raise FrontierError(f"{url}: {redirect_refusal(error.status_code, error.response.headers)}") from None
            if error.status_code in (401, 403):
                raise FrontierError(
                    f"{url} refused the API key (HTTP {error.status_code}): set ${self.config.api_key_env} "
                    "to a valid key"
                ) from None
            raise FrontierError(
                f"{url} answered HTTP {error.status_code}: check BASE_URL (it usually ends in /v1)"
            ) from None
        # Not JSON (ValueError: mlx_lm.server's empty body), or JSON of another shape (the client's parser fails).
        except (openai.OpenAIError, ValueError, AttributeError, TypeError, KeyError):
            raise FrontierError(f"{url} did not answer with a model list: {_LIST_FIX}") from None


# mlx_lm.server answers GET /models with an empty 200 when its Hugging Face cache folder does not exist.
_LIST_FIX = ("check BASE_URL (it usually ends in /v1); an mlx_lm.server needs HF_HUB_CACHE to name an existing "
             "folder (docs/frontier.md)")


def redirect_refusal(status: int, headers: Any) -> str:
    """Why a redirect is not followed, naming where it pointed (without any credentials or query it carried)."""
    location = urllib.parse.urlsplit(str(headers.get("location", "")))
    host = location.hostname or ""
    where = f"{location.scheme}://{host}{f':{location.port}' if location.port else ''}{location.path}" if host \
        else location.path
    return (f"HTTP {status} redirect to {ascii(where)} refused: arena follows no redirects (a pin names one "
            "endpoint); put the final URL in the spec")


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
