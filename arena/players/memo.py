"""The policy memo: a fixed model's masked distribution at each distinct (prompt, legal actions), scored once."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np


class PolicyMemo:
    """Log-probabilities of the legal actions per distinct (prompt tokens, legal actions), for one fixed model.

    A model's masked, tempered distribution at a prompt is a pure function of the model, the prompt's tokens and
    the legal actions, so a game with few distinct decision prompts (Kuhn's compact view has a dozen) needs only
    that many scorings however many games are played. The player scores each miss in a pass of its own, so an
    entry never depends on what the prompt was first batched with (batched scoring differs in the last bits).
    Bounded by ``capacity`` entries, evicting the least recently used one; whoever changes the model's weights
    must ``clear`` it.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.entries: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.hits = self.misses = 0

    def __bool__(self) -> bool:
        return self.capacity > 0

    @staticmethod
    def key(prompt: Sequence[int], legal: Sequence[str]) -> bytes:
        """A compact key: the prompt as int32 bytes, then the legal actions (NUL-separated text)."""
        tokens = np.asarray(prompt, dtype=np.int32).tobytes()
        return len(tokens).to_bytes(8, "big") + tokens + "\0".join(legal).encode()

    def get(self, key: bytes) -> np.ndarray | None:
        logp = self.entries.get(key)
        if logp is None:
            self.misses += 1
            return None
        self.hits += 1
        self.entries.move_to_end(key)
        return logp

    def put(self, key: bytes, logp: np.ndarray) -> None:
        self.entries[key] = logp
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)

    def clear(self) -> None:
        self.entries.clear()
