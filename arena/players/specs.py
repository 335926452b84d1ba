"""Player specs as text: their forms, parsed and checked without building a player (what params checks need)."""

from __future__ import annotations

import math
import re
import unicodedata
import urllib.parse

from arena.core.errors import ArenaError

EPS_ORACLE = "eps-oracle:"
# How the one parametrised scripted player is written: every message that lists the scripted players uses it.
EPS_ORACLE_FORM = f"{EPS_ORACLE}EPS (EPS in [0, 1])"
SPEC_HELP = (f"random, first, oracle, {EPS_ORACLE_FORM}, staller, spammer, (negotiation) greedy, fair, never, "
             "responder, accept-all, offer-spam, mlx:PATH or openai:MODEL@BASE_URL")
# The scripted players' names (arena.players.scripted maps each to its class; a test keeps the two in step).
SCRIPTED_NAMES = ("random", "first", "oracle", "staller", "spammer", "greedy", "fair", "never", "responder",
                  "accept-all", "offer-spam")
SPEC_PREFIX = "openai:"


def parse_epsilon(spec: str) -> float:
    """The epsilon of an ``eps-oracle:EPS`` spec; a ValueError names the spec and the allowed range."""
    text = spec[len(EPS_ORACLE):] if spec.startswith(EPS_ORACLE) else None
    try:
        epsilon = float(text) if text is not None else math.nan
    except ValueError:
        epsilon = math.nan
    if not 0.0 <= epsilon <= 1.0:  # also rejects NaN
        raise ValueError(f"player spec {spec!r} is invalid: write eps-oracle:EPS with EPS a number in [0, 1] "
                         "(1 plays uniformly at random, 0 is the oracle)")
    return epsilon


def is_scripted(spec: str) -> bool:
    """Whether ``spec`` names a scripted player (a fixed name, or a well-formed ``eps-oracle:EPS``)."""
    if spec in SCRIPTED_NAMES:
        return True
    if isinstance(spec, str) and spec.startswith(EPS_ORACLE):
        try:
            parse_epsilon(spec)
        except ValueError:
            return False
        return True
    return False


class FrontierError(ArenaError):
    """A frontier player spec or endpoint the user must fix (bad spec, unreachable server, refused key)."""


_SPEC_RE = re.compile(r"^openai:(?P<model>.+?)@(?P<url>https?://.+)$", re.DOTALL)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``openai:MODEL@BASE_URL`` into ``(model, base_url)``; the URL loses any trailing slash.

    The model may itself contain ``@`` or ``/`` (a local path): the URL starts at the first ``@http``.
    """
    example = "e.g. openai:gpt-4o-mini@https://api.openai.com/v1 or openai:default_model@http://127.0.0.1:8080/v1"
    if not isinstance(spec, str) or not spec.startswith(SPEC_PREFIX):
        raise FrontierError(f"frontier player spec {spec!r} must start with {SPEC_PREFIX!r}: {example}")
    match = _SPEC_RE.match(spec)
    if match is None:
        raise FrontierError(
            f"frontier player spec {spec!r} must be openai:MODEL@BASE_URL with an http(s) URL: {example}"
        )
    return check_model_name(match.group("model")), normalise_base_url(match.group("url"))


def odd_characters(text: str) -> list[str]:
    """The characters of ``text`` that print invisibly or move other text: controls, format characters (bidi
    overrides, zero-width), line and paragraph separators, spaces other than U+0020, private-use, unassigned."""
    return [c for c in text if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp")
            or (unicodedata.category(c) == "Zs" and c != " ")]


def check_model_name(model: str) -> str:
    """``model`` when it is a plain model id (printable, no surrounding spaces), else a one-line FrontierError that
    shows it escaped (a bidi override printed raw would reorder the terminal line or a leaderboard row)."""
    if not model or model != model.strip() or odd_characters(model):
        raise FrontierError(f"model name {ascii(model)} must be non-empty, without surrounding spaces, control, "
                            "format (bidi, zero-width) or invisible characters: give the model id the server lists")
    return model


def normalise_base_url(url: str) -> str:
    """Check an endpoint URL (http/https, a host, no credentials, query or fragment); drop a trailing slash."""
    if odd_characters(url) or any(c in url for c in " \\"):
        raise FrontierError(f"endpoint URL {ascii(url)} holds spaces, backslashes, control, format or invisible "
                            "characters: give a plain URL, e.g. http://127.0.0.1:8080/v1")
    parts = urllib.parse.urlsplit(url)
    if any(urllib.parse.unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        raise FrontierError(f"endpoint URL {url!r} has a '.' or '..' path segment: give the base URL itself "
                            "(e.g. http://127.0.0.1:8080/v1)")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FrontierError(f"endpoint URL {url!r} must be http:// or https:// with a host, e.g. http://127.0.0.1:8080/v1")
    if parts.username is not None or parts.password is not None:
        # Credentials in the URL would end up in pins and cache records: keys belong in the environment.
        raise FrontierError(
            f"endpoint URL for host {parts.hostname!r} contains credentials: remove them and put the key in "
            "the environment variable named by frontier.api_key_env"
        )
    if parts.query or parts.fragment:
        raise FrontierError(f"endpoint URL {url!r} must not have a query or fragment: give the base URL (…/v1)")
    try:
        parts.port  # noqa: B018 -- urlsplit validates the port lazily
    except ValueError as error:
        raise FrontierError(f"endpoint URL {url!r} has an invalid port: {error}") from None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
