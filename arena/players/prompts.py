"""What a local model is shown and scored on: chat messages per view, rendered with its own chat template."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena.core.errors import ArenaError
from arena.games.base import Observation
from arena.players.config import DEFAULT_SYSTEM_PROMPT

# The full view's system message: the move format (the same words a frontier player is given by default).
SYSTEM_PROMPT = DEFAULT_SYSTEM_PROMPT
# The user message that stands in for any observation when an action's reply tokens are rendered (see ChatPrompts).
PROBE_USER = "Your move."

Message = Mapping[str, str]


def prompt_text(observation: Observation, view: str) -> str:
    """The user message a model sees: the compact view, or the full observation plus the legal actions."""
    if view == "compact":
        return observation.compact
    return f"{observation.text}\nLegal actions: {' '.join(observation.legal_actions)}"


def view_messages(user: str, view: str) -> list[dict[str, str]]:
    """The conversation before the model's reply: the user message alone (compact), or after the system message."""
    if view == "compact":
        return [{"role": "user", "content": user}]
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def chat_messages(observation: Observation, view: str) -> list[dict[str, str]]:
    """The conversation a model is shown at ``observation``."""
    return view_messages(prompt_text(observation, view), view)


def render(tokenizer: Any, messages: Sequence[Message], *, reply: str | None, enable_thinking: bool) -> str:
    """The template's text of ``messages``: with the generation prompt, or ending with the assistant's ``reply``."""
    conversation = [dict(m) for m in messages]
    if reply is not None:
        conversation.append({"role": "assistant", "content": reply})
    return tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=reply is None,
                                         enable_thinking=enable_thinking)


def prompt_ids(tokenizer: Any, messages: Sequence[Message], enable_thinking: bool) -> tuple[int, ...]:
    """The tokens the model is fed before it replies: the conversation with the template's generation prompt."""
    ids = tokenizer.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True,
                                        enable_thinking=enable_thinking)
    return tuple(int(i) for i in ids)


def reply_text(tokenizer: Any, messages: Sequence[Message], action: str, enable_thinking: bool) -> str:
    """What the template writes after the generation prompt when the assistant replies ``action``."""
    prompt = render(tokenizer, messages, reply=None, enable_thinking=enable_thinking)
    full = render(tokenizer, messages, reply=action, enable_thinking=enable_thinking)
    if not full.startswith(prompt):
        raise ArenaError(
            "the chat template renders an assistant reply that does not extend its own generation prompt "
            f"(prompt ends {prompt[-40:]!r}, the conversation with the reply has {full[len(prompt) - 40:][:80]!r}); "
            "actions cannot be scored as replies with it: use view: compact, or give the model a template "
            "whose assistant turn starts with its generation prompt"
        )
    return full[len(prompt):]


def end_of_turn_ids(tokenizer: Any) -> set[int]:
    """Tokens that end a turn: the tokenizer's end-of-sequence ids and its special tokens."""
    ids = set(getattr(tokenizer, "eos_token_ids", None) or ())
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ids.add(tokenizer.eos_token_id)
    return ids | set(getattr(tokenizer, "all_special_ids", None) or ())


def reply_ids(tokenizer: Any, reply: str, action: str) -> tuple[int, ...]:
    """The scored tokens of a rendered reply: everything up to the end of ``action``, then the end-of-turn token.

    The end-of-turn token is scored (the move is the whole reply, then the model stops); what the template writes
    after it (a newline) is formatting the model never generates, so it is not.
    """
    end = reply.rfind(action)
    if end < 0:
        raise ArenaError(f"the chat template rendered the reply {action!r} as {reply!r}, which does not contain it; "
                         "use view: compact with this model")
    end += len(action)
    head = tokenizer.encode(reply[:end], add_special_tokens=False)
    tail = tokenizer.encode(reply[end:], add_special_tokens=False) if reply[end:] else []
    stop = tail[:1] if tail and tail[0] in end_of_turn_ids(tokenizer) else []
    return tuple(int(i) for i in [*head, *stop])


def action_ids(tokenizer: Any, action: str, view: str, enable_thinking: bool) -> tuple[int, ...]:
    """The tokens a legal action is scored as: the bare action (compact), or the template's reply (full).

    The full view renders the reply once per action, after a stand-in conversation (``PROBE_USER``):
    ``ChatPrompts.check`` proves on a real conversation that the template's reply does not depend on it.
    """
    if view == "compact":
        return tuple(int(i) for i in tokenizer.encode(action, add_special_tokens=False))
    messages = view_messages(PROBE_USER, view)
    return reply_ids(tokenizer, reply_text(tokenizer, messages, action, enable_thinking), action)


def check_reply(tokenizer: Any, observation: Observation, view: str, enable_thinking: bool) -> None:
    """An ArenaError unless the template's reply after ``observation`` is the one ``action_ids`` scores."""
    if view == "compact" or not observation.legal_actions:
        return
    action = observation.legal_actions[0]
    real = reply_text(tokenizer, chat_messages(observation, view), action, enable_thinking)
    probe = reply_text(tokenizer, view_messages(PROBE_USER, view), action, enable_thinking)
    if real != probe:
        raise ArenaError(f"the chat template renders the reply {action!r} as {real!r} after a game's observation "
                         f"but {probe!r} after another message; arena scores one rendering per action, so use "
                         "view: compact with this model")


class ChatPrompts:
    """One tokenizer's prompts and action tokens for one view and thinking switch, each rendered once."""

    def __init__(self, tokenizer: Any, view: str, enable_thinking: bool) -> None:
        self.tokenizer = tokenizer
        self.view = view
        self.enable_thinking = enable_thinking
        self._prompts: dict[str, tuple[int, ...]] = {}
        self._actions: dict[str, tuple[int, ...]] = {}
        self._checked = False

    def prompt_ids(self, observation: Observation) -> tuple[int, ...]:
        """The tokens fed to the model at ``observation`` (the template's generation prompt included)."""
        text = prompt_text(observation, self.view)
        if text not in self._prompts:
            if not self._checked:
                check_reply(self.tokenizer, observation, self.view, self.enable_thinking)
                self._checked = True
            messages = view_messages(text, self.view)
            self._prompts[text] = prompt_ids(self.tokenizer, messages, self.enable_thinking)
        return self._prompts[text]

    def action_ids(self, action: str) -> tuple[int, ...]:
        """The tokens ``action`` is scored as after any prompt."""
        if action not in self._actions:
            self._actions[action] = action_ids(self.tokenizer, action, self.view, self.enable_thinking)
        return self._actions[action]


def first_observation(game_id: str, seed: int, variant: Mapping[str, Any]) -> Observation:
    """The first player's observation of a fresh game (``arena prompt``); a bad variant is an ArenaError."""
    from arena.games.registry import make_game

    try:
        return make_game(game_id, seed, variant).observation()
    except ValueError as error:
        raise ArenaError(f"variant {dict(variant)!r}: {error}") from None


def prompt_report(tokenizer: Any, observation: Observation, view: str, enable_thinking: bool) -> str:
    """``arena prompt``'s text: the rendered prompt, its token count, and each legal action's scored tokens."""
    prompts = ChatPrompts(tokenizer, view, enable_thinking)
    ids = prompts.prompt_ids(observation)
    text = render(tokenizer, chat_messages(observation, view), reply=None, enable_thinking=enable_thinking)
    lines = [text, "-" * 72,
             f"prompt: {len(ids)} tokens ({observation.game_id}, player {observation.player_id}, view {view}, "
             f"thinking {'on' if enable_thinking else 'off'})",
             f"legal actions: {len(observation.legal_actions)}"]
    for action in observation.legal_actions:
        tokens = prompts.action_ids(action)
        lines.append(f"  {action}: {len(tokens)} tokens {[tokenizer.decode([t]) for t in tokens]!r}")
    rows = sum(len(ids) + len(prompts.action_ids(a)) for a in observation.legal_actions)
    lines.append(f"scored as prompt + reply per action: {rows} tokens in all")
    return "\n".join(lines)
