"""A scoring pass's layout: decisions packed under a token budget into distinct prompts, action tries and head rows."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arena.core.errors import ArenaError


@dataclass(frozen=True)
class ScoringBatch:
    """One pass: distinct prompts (left-padded), each prompt's action trie, and what to read.

    Phase 1 runs the distinct prompts through the transformer body once, keeping their keys and values. Prompts
    that share a long prefix (a game's rules text) share it: the stems run first, each prompt's tail as their
    continuation; a stem may instead come from the cross-turn store (``stored``: a game's previous prompt, see
    arena.players.kvcache.TurnCache). Phase 2 runs every prompt's multi-token actions as one packed row over its
    cached keys and values: each distinct action prefix once (Liar's Dice bids share "[Bid:" and their quantity),
    each token at its own position, seeing its ancestors only. Tails and tries run rows of similar width together
    (see arena.players.levels). The output head is applied only at the hidden states that predict an action token
    -- the prompt's last position for every first token, a trie position for the others -- each distinct one once.

    A decision scored **by choice** (its game's legal actions are a grammar: arena.games.variants.scored_by_choice)
    has each token's log-probability renormalised over the tokens its legal actions continue with at that node
    (constrained decoding): a token every legal action shares costs nothing, so an action's score no longer falls
    with its length. ``choice_pick`` names one scored token per distinct (decision, head row, token),
    ``choice_table`` each (decision, head row)'s siblings as indices into it (padded with its length), and
    ``choice_group`` each scored token's (decision, head row), or the group count where it is not renormalised.
    """

    prompts: np.ndarray          # [S, Ls] int32, left-padded: the prompts, or their computed stems
    prompt_pad: np.ndarray       # [S] int32, left padding of each row
    tails: np.ndarray            # [P, Lt] int32, right-padded: each prompt after its stem (P = 0: no stems)
    tail_stem: np.ndarray        # [P] int32, the stem each tail extends: a computed row, then the stored ones
    tail_len: np.ndarray         # [P] int32
    trie: np.ndarray             # [P, N] int32, right-padded: each prompt's distinct action-prefix tokens
    trie_depth: np.ndarray       # [P, N] int32, each one's position after the prompt's last (0: right after)
    trie_mask: np.ndarray        # [P, N, N] bool, which of the row's trie tokens each one sees (its ancestors, itself)
    trie_len: np.ndarray         # [P] int32, each row's real trie tokens (the rest of its N is padding)
    head_src: np.ndarray         # [H] int32, index into [P last states] + [P x N trie states, row-major]
    gather_head: np.ndarray      # per scored token: its head row,
    gather_tok: np.ndarray       # the token id it must predict,
    gather_action: np.ndarray    # and the action it belongs to
    action_offsets: tuple[int, ...]  # decision d owns actions [offsets[d], offsets[d+1])
    stored: tuple[tuple[int, int], ...] = ()  # per stored stem: (decision whose stream holds it, its tokens)
    choice_pick: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    choice_table: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int32))
    choice_group: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    @property
    def tokens(self) -> int:  # token positions run through the body, padding included
        return int(self.prompts.size + self.tails.size + self.trie.size)

    @property
    def prompt_rows(self) -> int:
        return int(self.tails.shape[0] if self.tails.size or self.stored else self.prompts.shape[0])


@dataclass(frozen=True)
class _Shape:
    """One legal-action list's trie and head rows as a prompt row met for the first time gets them (the general
    path of ``_Builder.add`` run on an empty row), so later decisions with the same list copy them whole."""

    nodes: dict[tuple[int, ...], int]     # action prefix -> its trie column
    rows: tuple[tuple[int, int, int], ...]  # per column: (parent column or -1, token, depth)
    heads: dict[tuple[int, ...], int]     # action prefix -> its head row, counted from the row's first
    head_cols: tuple[int, ...]            # per head row: -1 (the prompt's last state) or its trie column
    scored: np.ndarray                    # [tokens, 3] int64: (head row, token, action), rows and actions from 0


@functools.lru_cache(maxsize=1024)
def _shape(legal: tuple[tuple[int, ...], ...]) -> _Shape:
    """``legal``'s trie and head rows on a fresh prompt row, built token by token once (lists repeat across passes)."""
    builder = _Builder()
    builder.add((0,), legal, fresh=False)
    scored = np.asarray(builder.scored[0], dtype=np.int64).reshape(-1, 3)
    return _Shape(builder.nodes[0], tuple(builder.rows[0]), builder.heads[0],
                  tuple(col for _, col in builder.head_src), scored)


class _Builder:
    """Accumulates decisions into one ScoringBatch, deduplicating prompts, trie nodes and head rows.

    A pass costs ``P * Lp + [P * (Lp + N)] + H * head_weight`` tokens: P padded prompt rows, their tries (when any
    action has more than one token: N nodes a row at most, over a copy of the prompt's keys and values), and H
    head rows, each weighing as much as ``head_weight`` tokens (a vocabulary-sized row of log-probabilities).
    A prompt's first decision copies its legal list's cached ``_Shape`` (Liar's Dice: 36 bids of 7 tokens, the same
    lists again and again); a prompt met again extends its row token by token.
    """

    def __init__(self) -> None:
        self.prompts: dict[tuple[int, ...], int] = {}
        self.reuse: dict[int, tuple[int, int]] = {}  # prompt row -> (stored tokens, decision that holds them)
        self.nodes: list[dict[tuple[int, ...], int]] = []  # per prompt row: action prefix -> its column
        self.rows: list[list[tuple[int, int, int]]] = []  # per prompt row: (parent column or -1, token, depth)
        self.heads: list[dict[tuple[int, ...], int]] = []  # per prompt row: action prefix -> its head row
        self.head_src: list[tuple[int, int]] = []  # (prompt row, -1: its last state; else its trie column)
        self.scored: list[Any] = []  # per decision: [tokens, 3] (head row, token, action), array or list of tuples
        self.offsets = [0]
        self.choices: list[bool] = []  # per decision: scored by choice
        self.lp = self.width = 0
        self.decision_rows: list[int] = []  # per decision: its prompt row

    def cost_with(self, prompt: tuple[int, ...], legal: tuple[tuple[int, ...], ...], head_weight: int) -> int:
        """The pass's cost in tokens if this decision were added; nothing is changed."""
        row = self.prompts.get(prompt, -1)
        if row < 0:
            shape = _shape(legal)
            new_heads, width = len(shape.heads), len(shape.rows)
        else:
            nodes, heads = self.nodes[row], self.heads[row]
            width = len(self.rows[row]) + len({a[:i] for a in legal for i in range(1, len(a)) if a[:i] not in nodes})
            new_heads = len({a[:i] for a in legal for i in range(len(a)) if a[:i] not in heads})
        n_prompts = len(self.prompts) + (row < 0)
        lp = max(self.lp, len(prompt))
        width = max(self.width, width)
        trie = n_prompts * (lp + width) if width else 0
        return n_prompts * lp + trie + (len(self.head_src) + new_heads) * head_weight

    def add(self, prompt: tuple[int, ...], legal: tuple[tuple[int, ...], ...], fresh: bool = True,
            choice: bool = False) -> None:
        """Add one decision; ``fresh``: a new prompt's row copies its legal list's cached shape; ``choice``: scored
        by choice (see ScoringBatch)."""
        self.choices.append(choice)
        row = self.prompts.setdefault(prompt, len(self.prompts))
        new = row == len(self.rows)
        self.decision_rows.append(row)
        self.lp = max(self.lp, len(prompt))
        if new and fresh:
            self._copy_shape(row, _shape(legal))
        else:
            if new:
                self.nodes.append({})
                self.rows.append([])
                self.heads.append({})
            self._extend(row, legal)
        self.offsets.append(self.offsets[-1] + len(legal))

    def _copy_shape(self, row: int, shape: _Shape) -> None:
        base, first_action = len(self.head_src), self.offsets[-1]
        self.nodes.append(dict(shape.nodes))
        self.rows.append(list(shape.rows))
        self.heads.append({prefix: base + index for prefix, index in shape.heads.items()})
        self.head_src.extend((row, col) for col in shape.head_cols)
        self.scored.append(shape.scored + np.array([base, 0, first_action]))
        self.width = max(self.width, len(shape.rows))

    def _extend(self, row: int, legal: tuple[tuple[int, ...], ...]) -> None:
        heads, scored, index = self.heads[row], [], self.offsets[-1]
        for action in legal:
            for i, token in enumerate(action):
                prefix = action[:i]
                if prefix not in heads:
                    heads[prefix] = len(self.head_src)
                    self.head_src.append((row, -1 if i == 0 else self._node(row, prefix)))
                scored.append((heads[prefix], token, index))
            index += 1
        self.scored.append(scored)

    def _node(self, row: int, prefix: tuple[int, ...]) -> int:
        """The trie column holding ``prefix``'s last token (its parent first)."""
        nodes = self.nodes[row]
        if prefix not in nodes:
            parent = -1 if len(prefix) == 1 else self._node(row, prefix[:-1])
            nodes[prefix] = len(self.rows[row])
            self.rows[row].append((parent, prefix[-1], len(prefix) - 1))
            self.width = max(self.width, len(self.rows[row]))
        return nodes[prefix]

    def build(self, pad_id: int, reuse: Sequence[int] | None = None) -> ScoringBatch:
        """The pass; ``reuse[d]``: how many leading tokens of decision d's prompt the cross-turn store holds (a
        prompt row's stem is the longest any of its decisions holds, the first such decision's)."""
        for decision, tokens in enumerate(reuse or ()):
            row = self.decision_rows[decision]
            if tokens > self.reuse.get(row, (0, 0))[0]:
                self.reuse[row] = (tokens, decision)
        prompts = list(self.prompts)
        if any(len(prompts[i]) < 2 for i in range(len(prompts)) if i not in self.reuse):
            self.reuse = {}  # a one-token prompt has no stem to run beside stored ones: compute them all
        fresh = [i for i in range(len(prompts)) if i not in self.reuse]
        stems, tails, tail_stem = _stems([prompts[i] for i in fresh], force=bool(self.reuse))
        if self.reuse:  # stored stems follow the computed ones; every prompt gets a tail
            order = sorted(self.reuse)
            all_tails, all_stem = [()] * len(prompts), [0] * len(prompts)
            for i, tail, stem in zip(fresh, tails, tail_stem, strict=True):
                all_tails[i], all_stem[i] = tail, stem
            for j, i in enumerate(order):
                all_tails[i], all_stem[i] = prompts[i][self.reuse[i][0]:], len(stems) + j
            tails, tail_stem = all_tails, all_stem
        stored = tuple((self.reuse[i][1], self.reuse[i][0]) for i in sorted(self.reuse))
        prompt_rows, pad = _left_padded(stems, pad_id) if stems else (np.zeros((0, 0), np.int32), np.zeros(0, np.int32))
        tail_rows, tail_len = _right_padded(tails, pad_id)
        trie, depth, mask = self._trie(pad_id)
        widths = np.asarray([len(nodes) for nodes in self.rows], dtype=np.int32)
        src = [r if col < 0 else len(prompts) + r * trie.shape[1] + col for r, col in self.head_src]
        as_int = lambda values: np.asarray(values, dtype=np.int32).reshape(-1)  # noqa: E731
        scored = np.concatenate([np.asarray(part, dtype=np.int64).reshape(-1, 3) for part in self.scored]
                                or [np.zeros((0, 3), np.int64)])
        head, tok, act = (as_int(scored[:, k]) for k in range(3))
        pick, table, group = choice_groups(head, tok, act, self.offsets, self.choices)
        return ScoringBatch(prompt_rows, pad, tail_rows, as_int(tail_stem), tail_len, trie, depth, mask,
                            widths, as_int(src), head, tok, act, tuple(self.offsets), stored, pick, table, group)

    def _trie(self, pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each prompt row's trie as [P, N] tokens and depths and its [P, N, N] ancestor mask (none: N = 0)."""
        n = self.width
        tokens = np.full((len(self.rows), n), pad_id, dtype=np.int32)
        depth = np.zeros((len(self.rows), n), dtype=np.int32)
        mask = np.zeros((len(self.rows), n, n), dtype=bool)
        for r, nodes in enumerate(self.rows if n else ()):
            for col, (parent, token, d) in enumerate(nodes):
                tokens[r, col], depth[r, col] = token, d
                mask[r, col] = mask[r, parent] if parent >= 0 else False
                mask[r, col, col] = True
            mask[r, np.arange(len(nodes), n), np.arange(len(nodes), n)] = True  # padding sees itself
        return tokens, depth, mask


def choice_groups(head: np.ndarray, tok: np.ndarray, act: np.ndarray, offsets: Sequence[int],
                  choices: Sequence[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ScoringBatch's ``choice_pick``, ``choice_table`` and ``choice_group`` for scored tokens (``head``, ``tok``,
    ``act``) of decisions owning actions [offsets[d], offsets[d+1]), those with ``choices[d]`` renormalised."""
    n = len(head)
    decision = np.searchsorted(np.asarray(offsets), act, side="right") - 1
    on = np.nonzero(np.asarray(choices, dtype=bool)[decision])[0] if n and any(choices) else np.zeros(0, np.int64)
    if not on.size:
        return np.zeros(0, np.int32), np.zeros((0, 0), np.int32), np.zeros(n, np.int32)
    heads = int(head.max()) + 1
    group_key = decision[on].astype(np.int64) * heads + head[on]
    _, group_of = np.unique(group_key, return_inverse=True)
    vocab = int(tok.max()) + 1
    pairs, first, _ = np.unique(group_of.astype(np.int64) * vocab + tok[on], return_index=True, return_inverse=True)
    pair_group = pairs // vocab  # ascending: each group's distinct tokens are consecutive
    groups = int(group_of.max()) + 1
    counts = np.bincount(pair_group, minlength=groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    table = np.full((groups, int(counts.max())), len(pairs), dtype=np.int32)
    table[pair_group, np.arange(len(pairs)) - starts[pair_group]] = np.arange(len(pairs))
    group = np.full(n, groups, dtype=np.int32)
    group[on] = group_of
    return on[first].astype(np.int32), table, group


MIN_STEM = 16  # shared prefixes shorter than this are recomputed per prompt


def _common(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _stems(prompts: list[tuple[int, ...]], force: bool = False
           ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], list[int]]:
    """Split prompts into shared stems and per-prompt tails (each tail >= 1 token), or (prompts, [], []) when that
    saves no padded tokens (unless ``force``: stored stems need every prompt split). Groups are runs of the sorted
    prompts, so the split depends only on the set of prompts."""
    if not prompts:
        return [], [], []
    order = sorted(range(len(prompts)), key=prompts.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups:
            shared = _common(prompts[groups[-1][0]], prompts[i])
            if shared >= MIN_STEM and (len(groups[-1]) == 1 or shared >= _group_stem(prompts, groups[-1]) // 2):
                groups[-1].append(i)
                continue
        groups.append([i])
    stems, tails, tail_stem = [], [()] * len(prompts), [0] * len(prompts)
    for group in groups:  # a lone prompt's stem is all but its last token
        cut = _group_stem(prompts, group) if len(group) > 1 else len(prompts[group[0]]) - 1
        for i in group:
            tails[i], tail_stem[i] = prompts[i][cut:], len(stems)
        stems.append(prompts[group[0]][:cut])
    padded = len(stems) * max(map(len, stems)) + len(tails) * max(map(len, tails))
    if not force and padded >= len(prompts) * max(map(len, prompts)):  # stems saving no padded tokens: not worth it
        return prompts, [], []
    return stems, tails, tail_stem


def _group_stem(prompts: list[tuple[int, ...]], group: list[int]) -> int:
    """The group's shared prefix, leaving every prompt at least one token of its own."""
    first, last = prompts[group[0]], prompts[group[-1]]  # sorted: the ends share the least
    return min(_common(first, last), *(len(prompts[i]) - 1 for i in group))


def _left_padded(rows: list[tuple[int, ...]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    width = max(map(len, rows))
    out = np.full((len(rows), width), pad_id, dtype=np.int32)
    pad = np.zeros(len(rows), dtype=np.int32)
    for i, seq in enumerate(rows):
        out[i, width - len(seq):] = seq
        pad[i] = width - len(seq)
    return out, pad


def _right_padded(rows: list[tuple[int, ...]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    out = np.full((len(rows), max(map(len, rows), default=0)), pad_id, dtype=np.int32)
    for i, seq in enumerate(rows):
        out[i, : len(seq)] = seq
    return out, np.asarray(list(map(len, rows)), dtype=np.int32)


def _checked(prompt: Sequence[int], legal: Sequence[Sequence[int]]
             ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    if not prompt:
        raise ValueError("cannot score an empty prompt")
    if any(not action for action in legal):
        raise ValueError("cannot score an empty action")
    return tuple(prompt), tuple(tuple(action) for action in legal)


def build_batch(prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[Sequence[int]]],
                pad_id: int = 0, choices: Sequence[bool] | None = None) -> ScoringBatch:
    """Every decision in one pass, whatever its size (see ScoringBatch)."""
    builder = _Builder()
    for index, (prompt, legal) in enumerate(zip(prompts, actions, strict=True)):
        builder.add(*_checked(prompt, legal), choice=bool(choices and choices[index]))
    return builder.build(pad_id)


def plan_passes(prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[Sequence[int]]], max_tokens: int,
                head_weight: int, key: str, choices: Sequence[bool] | None = None
                ) -> Iterator[tuple[int, int, _Builder]]:
    """Consecutive decisions [start, end) in passes of at most ``max_tokens`` (see _Builder); yields each pass's
    builder, not yet built (``build(pad_id, reuse)``), as soon as the next decision does not fit.

    A pass counts its prompts at full length, so the split depends only on the decisions and the budget, never on
    what the cross-turn store holds when the pass is built. ``choices[d]``: decision d is scored by choice (see
    ScoringBatch).
    """
    builder, start = _Builder(), 0
    for index, (prompt, legal) in enumerate(zip(prompts, actions, strict=True)):
        prompt, legal = _checked(prompt, legal)
        if builder.cost_with(prompt, legal, head_weight) > max_tokens and index > start:
            yield start, index, builder
            builder, start = _Builder(), index
        alone = builder.cost_with(prompt, legal, head_weight)
        if alone > max_tokens:
            raise ArenaError(
                f"one decision needs {alone} scoring tokens (a {len(prompt)}-token prompt and {len(legal)} legal "
                f"actions of up to {max(map(len, legal))} tokens, each scored position of the output head counting "
                f"{head_weight}), over {key} = {max_tokens}: raise {key} to at least {alone}")
        builder.add(prompt, legal, choice=bool(choices is not None and choices[index]))
    if len(prompts) > start:
        yield start, len(prompts), builder


def pack_batches(prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[Sequence[int]]], max_tokens: int,
                 head_weight: int, key: str, pad_id: int = 0, reuse: Sequence[int] | None = None,
                 choices: Sequence[bool] | None = None) -> Iterator[tuple[int, int, ScoringBatch]]:
    """``plan_passes``' passes, built: (start, end, ScoringBatch) each (``reuse[d]``: how many leading tokens of
    decision d's prompt the cross-turn store holds, 0: none; ``choices[d]``: decision d is scored by choice)."""
    for start, end, builder in plan_passes(prompts, actions, max_tokens, head_weight, key, choices):
        yield start, end, builder.build(pad_id, None if reuse is None else reuse[start:end])
