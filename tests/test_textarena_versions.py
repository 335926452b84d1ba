"""Other TextArena versions' ids (SPIRAL's, 0.6.4's): played by the installed env they map to, or refused in a line."""

import pytest

from arena.core.errors import ArenaError
from arena.games.registry import get_spec, make_game
from arena.games.variants import TEXTARENA_ALIASES, check_game_id, resolve_env_id


def test_every_mapped_id_names_an_installed_env_that_starts_with_its_overrides():
    from textarena.envs.registration import ENV_REGISTRY

    mapped = {old: target for old, (target, _, _) in TEXTARENA_ALIASES.items() if target is not None}
    assert {"KuhnPoker-v1", "SimpleNegotiation-v1", "Nim-v0-small", "Surround-v0-huge"} <= set(mapped)
    for old, target in mapped.items():
        assert target in ENV_REGISTRY, old
        assert old not in ENV_REGISTRY, f"{old} is an installed id: it must not be remapped"
        game = make_game(f"textarena:{old}", 0)
        assert game.env_id == target and not game.done


def test_spirals_kuhn_plays_as_the_installed_five_round_kuhn_and_replays():
    game = make_game("textarena:KuhnPoker-v1", 3)
    assert game._ta_state.game_state["current_round"] == 1 and "5 round game" in game.observation().text
    for _ in range(12):
        if game.done:
            break
        game.step("[check]")  # every round checks down to a showdown
    assert game.done and game.result().forfeit_by is None
    assert get_spec("textarena:KuhnPoker-v1").env_id == "KuhnPoker-v0-short"


def test_overrides_reach_the_env():
    game = make_game("textarena:Nim-v0-small", 0)
    assert list(game._ta_state.game_state["piles"]) == [1, 2, 3]
    assert resolve_env_id("KuhnPoker-v0-extended") == ("KuhnPoker-v0", {"max_rounds": 30})


@pytest.mark.parametrize("old", ["LiarsDice-v1", "KuhnPoker-v0-highstakes", "RandomizedTicTacToe-v0"])
def test_an_id_no_installed_env_plays_is_refused_with_the_reason(old):
    with pytest.raises(ArenaError, match=f"textarena:{old} is not played by TextArena 0.7.4"):
        check_game_id(f"textarena:{old}")
    with pytest.raises(ArenaError, match="not played"):
        make_game(f"textarena:{old}", 0)


def test_a_bare_textarena_id_gets_a_hint():
    with pytest.raises(ArenaError, match="write textarena:KuhnPoker-v1"):
        get_spec("KuhnPoker-v1")


def test_spirals_negotiation_plays_as_the_ported_env_with_legal_actions():
    """SPIRAL's SimpleNegotiation-v1 is arena's negotiation with spiral: true (tests/test_spiral_negotiation.py)."""
    game = make_game("textarena:SimpleNegotiation-v1", 0)
    assert game.game_id == "negotiation" and game.variant["spiral"] and game.observation().legal_actions
