"""Figure training: tokens/s of arena's GRPO step (LoRA) against mlx-lm's own LoRA training step, same decisions."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence

from common import KUHN_EVAL_SEED, Row, base_model, interleaved, log, paired_speedup, throughput_row

# A training step, returning the tokens it trained on (prompt + action of each example) and the tokens it ran.
Step = Callable[[], tuple[int, int]]


def kuhn_decisions(player, deals: int):
    """The player's decisions in Kuhn self-play rollouts against random (two plays of each deal), with advantages."""
    from arena.play.match import play_match
    from arena.players.build import make_player
    from arena.train.config import TrainConfig
    from arena.train.selfplay.rollouts import selfplay_schedule
    from arena.train.selfplay.step import learner_decisions

    schedule = selfplay_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + deals), 2)
    records = play_match("kuhn", (player, make_player("random")), schedule, progress=False)
    return learner_decisions(records, player.spec, TrainConfig())


def mlx_lm_lora_step(model, optimizer):
    """mlx-lm's training step as ``mlx_lm.tuner.trainer.train`` builds it: default_loss, value_and_grad, update,
    compiled over the model, optimizer and random state (no gradient accumulation, one process)."""
    from functools import partial

    import mlx.core as mx
    import mlx.nn as nn
    from mlx_lm.tuner.trainer import default_loss

    loss_value_and_grad = nn.value_and_grad(model, default_loss)
    state = [model.state, optimizer.state, mx.random.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(batch, lengths):
        (loss, tokens), grad = loss_value_and_grad(model, batch, lengths)
        optimizer.update(model, grad)
        return loss, tokens

    def run(batch, lengths):
        loss, tokens = step(batch, lengths)
        mx.eval(state, loss, tokens)
        return loss

    return run


def sft_examples(policy, data) -> list[tuple[list[int], int]]:
    """The decisions as supervised examples for mlx-lm: prompt + chosen action tokens, and the prompt's length."""
    examples = []
    for observation, chosen in zip(data.observations, data.chosen, strict=True):
        prompt = list(policy._prompt_ids(observation))
        examples.append((prompt + list(policy._action_ids(observation.legal_actions[chosen])), len(prompt)))
    return examples


def _arena_step(update, data, sequence_tokens, batch_size: int, lr: float) -> Step:
    """arena's GRPOUpdate on a random batch of the decisions (the old policy standing in for the reference)."""
    import numpy as np

    rng = np.random.default_rng(0)

    def step() -> tuple[int, int]:
        picked = np.sort(rng.choice(len(data.chosen), size=batch_size, replace=False))
        result = update([data.observations[i] for i in picked], data.chosen[picked], data.logp_old[picked],
                        data.logp_old[picked], data.advantages[picked], lr)
        return int(sequence_tokens[picked].sum()), result["tokens"]

    return step


def _mlx_lm_step(model_dir, config, examples: Sequence[tuple[list[int], int]], batch_size: int) -> Step:
    """mlx-lm's LoRA step on a fresh copy of the model, fed by its own batcher (padded examples)."""
    import mlx.optimizers as optim
    import numpy as np
    from mlx_lm.tuner.trainer import iterate_batches

    from arena.players.mlx import load_model
    from arena.train.lora import attach_lora

    model, _ = load_model(model_dir)
    attach_lora(model, config)
    train_step = mlx_lm_lora_step(model, optim.Adam(learning_rate=config.lr, bias_correction=True))
    batches = iterate_batches(examples, batch_size, max_seq_length=2048, loop=True, seed=0)

    def step() -> tuple[int, int]:
        batch, lengths = next(batches)
        train_step(batch, lengths)
        return int(np.array(lengths)[:, 1].sum()), int(batch.size)

    return step


class Counted:
    """A side's step run ``per_turn`` times a call, keeping each step's trained and computed token counts."""

    def __init__(self, step: Step, per_turn: int) -> None:
        self.step, self.per_turn = step, per_turn
        self.logical: list[int] = []
        self.computed: list[int] = []

    def __call__(self, count: int | None = None) -> None:
        for _ in range(self.per_turn if count is None else count):
            logical, computed = self.step()
            self.logical.append(logical)
            self.computed.append(computed)

    def warm_up(self) -> None:
        """One step that is not counted: first-call allocations (arena), tracing and compilation (mlx-lm)."""
        self(1)
        self.logical.clear()
        self.computed.clear()


def _rows(times: Mapping[str, list[float]], sides: Mapping[str, Counted], batch_size: int,
          model_label: str) -> list[Row]:
    """Tokens/s of each side, per token trained on (the target) and per token actually computed (context)."""
    step_s = {name: statistics.median(t) / sides[name].per_turn for name, t in times.items()}
    tokens_per_step = {name: statistics.mean(side.logical) for name, side in sides.items()}
    computed_per_step = {name: statistics.mean(side.computed) for name, side in sides.items()}

    def speedup(per_step: dict[str, float]) -> float:
        return paired_speedup(times["ours"], times["mlx-lm"], sides["ours"].per_turn * per_step["ours"],
                              sides["mlx-lm"].per_turn * per_step["mlx-lm"])

    labels = ("arena GRPOUpdate (LoRA)", "mlx-lm LoRA step")
    width = computed_per_step["mlx-lm"] / batch_size
    headline = throughput_row(
        "training", f"LoRA step tokens/s, batch {batch_size} Kuhn decisions", "tokens/s",
        tokens_per_step["ours"] / step_s["ours"], tokens_per_step["mlx-lm"] / step_s["mlx-lm"], labels, 0.8,
        f"tokens = prompt + action tokens of the batch's decisions (same count for both); per step arena ran "
        f"{computed_per_step['ours']:.0f} tokens (identical prompts scored once), mlx-lm "
        f"{computed_per_step['mlx-lm']:.0f} (every example, padded); model: {model_label}",
        speedup(tokens_per_step), step_ms_ours=step_s["ours"] * 1e3, step_ms_reference=step_s["mlx-lm"] * 1e3,
        computed_tokens_ours=computed_per_step["ours"], computed_tokens_reference=computed_per_step["mlx-lm"])
    # The headline ratio is mostly arena scoring each distinct prompt once; per token actually run through the
    # model (forward + backward), this row shows how the two steps' kernels compare.
    kernels = throughput_row(
        "training", "LoRA step, tokens actually computed per second", "tokens/s",
        computed_per_step["ours"] / step_s["ours"], computed_per_step["mlx-lm"] / step_s["mlx-lm"], labels, None,
        f"context: arena's batch is {computed_per_step['ours']:.0f} tokens (distinct prompts), mlx-lm's "
        f"{batch_size} examples padded to {width:.0f} tokens each", speedup(computed_per_step))
    return [headline, kernels]


def _sides(model_dir, data, config, steps: Mapping[str, int]) -> dict[str, Counted]:
    """arena's GRPO step on a LoRA policy and mlx-lm's step on a LoRA copy of the same model, both warmed up."""
    import numpy as np

    from arena.players.mlx import MLXPlayer
    from arena.train.lora import attach_lora
    from arena.train.selfplay.update import GRPOUpdate

    policy = MLXPlayer(model_dir)
    attach_lora(policy.model, config)
    update = GRPOUpdate(policy, config, temperature=1.0)
    examples = sft_examples(policy, data)
    sequence_tokens = np.array([len(tokens) for tokens, _ in examples])
    reference = Counted(_mlx_lm_step(model_dir, config, examples, config.batch_size), steps["mlx-lm"])
    ours = Counted(_arena_step(update, data, sequence_tokens, config.batch_size, config.lr), steps["ours"])
    for side in (ours, reference):
        side.warm_up()
    return {"ours": ours, "mlx-lm": reference}


def figure(quick: bool) -> list[Row]:
    """Both LoRA steps on the same Kuhn decisions and batch size, alternating turns of a few steps each."""
    from arena.players.mlx import MLXPlayer
    from arena.train.config import TrainConfig

    # An mlx-lm step on 512 padded examples takes seconds here, arena's a fraction of one: each turn runs a
    # different number of steps of each, and the per-step times are compared.
    batch_size, deals, reps = (64, 96, 1) if quick else (512, 768, 3)
    steps = {"ours": 2, "mlx-lm": 1} if quick else {"ours": 8, "mlx-lm": 2}
    config = TrainConfig(method="lora", batch_size=batch_size)
    with base_model() as (model_dir, model_label):
        log(f"training: rollouts for {deals} deals")
        data = kuhn_decisions(MLXPlayer(model_dir), deals)
        if len(data.chosen) < batch_size:
            raise RuntimeError(f"only {len(data.chosen)} decisions for a batch of {batch_size}: raise deals")
        sides = _sides(model_dir, data, config, steps)
        log(f"training: batch {batch_size}, {steps['ours']} arena / {steps['mlx-lm']} mlx-lm steps per turn "
            f"x {reps} (alternating)")
        times = interleaved(sides, reps)
    return _rows(times, sides, batch_size, model_label)
