"""arena's games as verifiers v1 environments: a seeded infinite taskset, a two-seat game env, a local chat harness.

The game itself (rules, what each seat sees, parsing a reply into a legal action, re-prompting after an
illegal one, rewards and the transcript digest) is ``arena.play.external`` over ``arena.games``; this module
only wires it into verifiers: ``ArenaGameTaskset`` yields task ``k`` (seed ``seed_start + k``, role
``player_a`` in seat ``k % 2``), ``ArenaGameEnv.run`` relays each seat's turns between the game and that
role's agent, and records on every trace the role's reward (net chips for poker, +1/-1/0 otherwise) and the
game record in ``trace.info["arena"]`` so ``arena import-traces`` can replay and verify it.

``ArenaChatHarness`` is verifiers' own tool-less ``null`` chat program (0.3: ``null/program.py``; 0.4: the bundled
``CHAT_PROGRAM_SOURCE``) run by this interpreter instead of a ``uv``-provisioned one, so an eval needs no package
index at run time (the program's imports, openai, httpx, mcp and tenacity, are verifiers' own dependencies).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.harnesses import null as null_harness
from verifiers.v1.harnesses.null import NullHarness
from verifiers.v1.runtimes import ProgramResult, Runtime

from arena.play.external import ROLES, ExternalGame, game_task
from arena.players.config import DEFAULT_SYSTEM_PROMPT

try:  # verifiers 0.4: the chat loop is the bundled source of its harness utils (a PEP 723 script, run by uv there)
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE
except ImportError:  # verifiers 0.3: a file beside the null harness
    CHAT_PROGRAM_SOURCE = None
# verifiers' own chat loop (one completion per segment, no tools given); run as verifiers ships it, never edited.
PROGRAM = Path(null_harness.__file__).resolve().parent / "program.py"
PROGRAM_FILE = ".vf-arena-chat-program.py"  # where 0.4's bundled source is written in the seat's runtime
REWARD = "outcome"
INFO_KEY = "arena"


class ArenaGameConfig(vf.TasksetConfig):
    """Which game: its arena id, variant overrides, and the first task's deal seed."""

    game: str = "kuhn"
    variant: dict[str, Any] = {}
    seed_start: int = 0


class ArenaGameData(vf.TaskData):
    """One task: the game, its full variant, the deal seed and role A's seat (the rest follows from arena)."""

    game_id: str
    variant: dict[str, Any]
    seed: int
    first_seat: int


class ArenaGameTask(vf.Task[ArenaGameData, vf.State, vf.TaskConfig]):
    """A game task; its reward is recorded by the env (a game has two sides), not by a task hook."""


class ArenaGameTaskset(vf.Taskset[ArenaGameTask, ArenaGameConfig]):
    """Seeded and infinite: task ``k`` is the game on seed ``seed_start + k`` with the seats swapped every task."""

    INFINITE = True

    def load(self) -> Iterator[ArenaGameTask]:
        index = 0
        while True:
            task = game_task(self.config.game, self.config.variant, self.config.seed_start, index)
            yield ArenaGameTask(
                ArenaGameData(idx=index, name=f"{task.game_id}#{task.seed}", prompt=None,
                              system_prompt=DEFAULT_SYSTEM_PROMPT, game_id=task.game_id, variant=dict(task.variant),
                              seed=task.seed, first_seat=task.first_seat),
                self.config.task,
            )
            index += 1


def _seat_agent() -> vf.AgentConfig:
    # Local by default: the chat program needs no container, and the subprocess runtime needs no cloud account.
    return vf.AgentConfig(runtime={"type": "subprocess"})


class ArenaGameEnvConfig(vf.EnvConfig):
    """Two roles; ``--env.player-b.model`` (and ``--env.player-b.client.*``) put another model in the second."""

    player_a: vf.AgentConfig = _seat_agent()
    player_b: vf.AgentConfig = _seat_agent()
    fixed_opponent: bool = False
    """``player_b`` is a fixed opponent: its traces are marked untrainable (a trainer learns from player_a only)."""


def _task_of(task: vf.Task) -> Any:
    data = task.data
    got = game_task(data.game_id, data.variant, data.seed - data.idx, data.idx)
    if got.first_seat != data.first_seat:
        raise ValueError(f"task {data.idx}: first_seat {data.first_seat} breaks the schedule (role A sits in idx % 2)")
    return got


class ArenaGameEnv(vf.Env[ArenaGameEnvConfig]):
    """One game per episode: each role's agent is a real rollout, the caller (this env) relays the game."""

    async def setup(self, agents) -> None:
        if self.config.fixed_opponent:
            agents.player_b.trainable = False

    async def run(self, task, agents) -> None:
        game_spec = _task_of(task)
        roles = {role: getattr(agents, role) for role in ROLES}
        game = ExternalGame(game_spec, {role: str(agent.config.model) for role, agent in roles.items()})
        seat_task = type(task)(task.data.model_copy(update={"prompt": None}), task.config)
        async with roles[ROLES[0]].interaction(seat_task) as first, roles[ROLES[1]].interaction(seat_task) as second:
            talks = {ROLES[0]: first, ROLES[1]: second}
            while not game.done:
                role = game.role_to_act
                segment = await talks[role].turn(game.prompt())
                if segment.terminated:
                    game.stop(f"{role}'s run ended (a turn or token limit) before the game did")
                    break
                game.submit(segment.last_reply)
            # Recorded before the interactions close, so verifiers' own rollout log and scoring see them.
            record = game.record()
            for role, talk in talks.items():
                trace = talk.trace
                trace.record_reward(REWARD, game.reward(role), 1.0)
                trace.info[INFO_KEY] = {**record, "role": role, "seat": game_spec.seat_of(role),
                                        "model": str(roles[role].config.model),
                                        "base_url": roles[role].ctx.client.base_url}


class ArenaChatHarness(NullHarness):
    """verifiers' ``null`` chat program, run by this Python (its imports ship with verifiers) instead of uv."""

    async def setup(self, runtime: Runtime) -> None:
        return None

    async def launch(self, ctx, trace, runtime: Runtime, endpoint: str, secret: str, mcp_urls, data,
                     tool_interception_url: str | None = None) -> ProgramResult:
        if mcp_urls:
            raise ValueError("arena's game environments give the model no tools; remove the MCP tool servers")
        system_prompt, prompt = self.resolve_prompt(data)
        args = [f"--base-url={endpoint}", f"--api-key={secret}", f"--model={ctx.model}"]
        if CHAT_PROGRAM_SOURCE is not None:
            await runtime.write(PROGRAM_FILE, CHAT_PROGRAM_SOURCE.encode())
            program = PROGRAM_FILE
            if tool_interception_url:
                args.append(f"--tool-interception-url={tool_interception_url}")
        else:
            program = str(PROGRAM)
        if system_prompt:
            args.append(f"--system-prompt={system_prompt}")
        if isinstance(prompt, str):
            args.append(f"--prompt={prompt}")
        elif prompt is not None:
            path = f".vf-initial-messages-{trace.id}.json"
            await runtime.write(path, json.dumps([message_to_wire(m) for m in prompt]).encode())
            args.append(f"--initial-messages-file={path}")
        return await runtime.run_program([sys.executable, program, *args], dict(self.config.resolved_env))


__all__ = [
    "ArenaChatHarness",
    "ArenaGameConfig",
    "ArenaGameData",
    "ArenaGameEnv",
    "ArenaGameEnvConfig",
    "ArenaGameTask",
    "ArenaGameTaskset",
]
