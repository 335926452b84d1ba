"""Reading a frontier reply: a chat-completion body's shape, and the final answer its text gives as an action.

A reply may reason before it answers. Its answer is the content of its last ``<answer>...</answer>`` tag
(tags are matched ignoring case; a system prompt may ask for them, the default one does not), else the
whole text; in that answer, the legal action named last is played. What names no legal action reaches
the game sanitised, as an invalid move for it to reject.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# The longest free-text reply passed on to the game as an (invalid) action, and the longest model id kept.
MAX_ACTION_CHARS = 200
MAX_MODEL_ID_CHARS = 200
ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)


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


def _latest(haystack: str, needles: Sequence[tuple[re.Pattern[str], str]]) -> str | None:
    """The action whose pattern occurrence ends last in ``haystack``; on a tie the longest (earliest start)
    wins, so an action inside a longer one never beats it. Every start is tried, overlaps included."""
    best: tuple[int, int, str] | None = None
    for pattern, action in needles:
        position = 0
        while (match := pattern.search(haystack, position)) is not None:
            candidate = (match.end(), -match.start(), action)
            if best is None or candidate[:2] > best[:2]:
                best = candidate
            position = match.start() + 1
    return best[2] if best else None


def _passes(legal_actions: Sequence[str]) -> list[list[tuple[re.Pattern[str], str]]]:
    """The matching passes, strictest first: exact, ignoring case, bare bracket token as a whole word."""
    exact = [(re.compile(re.escape(a)), a) for a in legal_actions if a]
    folded = [(re.compile(re.escape(a), re.IGNORECASE), a) for a in legal_actions if a]
    tokens = [
        (re.compile(rf"(?<!\w){re.escape(a[1:-1].strip())}(?!\w)", re.IGNORECASE), a)
        for a in legal_actions
        if len(a) > 2 and a.startswith("[") and a.endswith("]") and a[1:-1].strip()
    ]
    return [exact, folded, tokens]


def final_answer(reply: str) -> str:
    """The content of the reply's last closed ``<answer>`` tag, else the whole reply."""
    tags = ANSWER_TAG.findall(reply)
    return tags[-1] if tags else reply


def parse_action(reply: str, legal_actions: Sequence[str]) -> str:
    """The legal action a free-text reply ends on, else its answer itself, sanitised, for the game to reject.

    The answer is the last ``<answer>...</answer>`` tag's content, else the whole reply. Passes in order:
    an exact legal action string; the same, ignoring case; the bare token inside a legal action's
    brackets as a whole word, ignoring case (``I bet`` -> ``[bet]``). Within the first pass that finds
    anything the latest occurrence wins, so ``I could [check], but I'll [bet]`` plays ``[bet]``.
    """
    answer = final_answer(reply)
    for needles in _passes(legal_actions):
        found = _latest(answer, needles)
        if found is not None:
            return found
    return sanitise(answer, MAX_ACTION_CHARS)


REDACTED = "[redacted]"


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret (the API key an endpoint may echo back) replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def scrub_reply(reply: Reply, secrets: Sequence[str]) -> Reply:
    """``reply`` with every secret scrubbed from each of its texts: what reaches the cache, records and logs."""
    def clean(text: str | None) -> str | None:
        return None if text is None else scrub(text, secrets)
    return Reply(model=clean(reply.model), content=scrub(reply.content, secrets),
                 finish_reason=clean(reply.finish_reason))


def parse_reply(body: bytes, secrets: Sequence[str] = ()) -> Reply:
    """Validate a chat-completion body's shape, scrubbing ``secrets`` from its texts (``scrub_reply``); raise
    AttemptFailed naming what is wrong."""
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
    finish = choice.get("finish_reason")
    # Scrubbed before sanitising (which could split a secret with spaces) and after it (what is kept).
    model = sanitise(scrub(_utf8(data["model"]), secrets), MAX_MODEL_ID_CHARS) if isinstance(data.get("model"), str) \
        else ""
    finish = sanitise(scrub(_utf8(finish), secrets), MAX_MODEL_ID_CHARS) if isinstance(finish, str) else None
    return scrub_reply(Reply(model=model or None, content=_utf8(content or ""), finish_reason=finish), secrets)
