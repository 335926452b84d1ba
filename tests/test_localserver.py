"""A local model served by mlx_lm.server for a block (the headline's endpoint), and its float32 copy for serving."""

from __future__ import annotations

import json
import socket

import mlx.core as mx
import numpy as np
import pytest

from arena.core.errors import ArenaError
from arena.eval.config import EvalConfig, TournamentConfig
from arena.eval.runner import run_stage_serving
from arena.players.build import PlayerConfigs
from arena.players.config import FrontierConfig
from arena.players.frontier import FrontierPlayer
from arena.players.localserver import _answers, served
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig
from arena.train.dequantise import dequantised_copy, float_weights


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_served_model_answers_for_the_block_and_is_gone_after(base_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    port = _free_port()
    with served(base_model_dir, port, tmp_path / "server.log") as url:
        player = FrontierPlayer(str(base_model_dir), url, FrontierConfig(max_tokens=4, timeout_s=60.0))
        assert str(base_model_dir.resolve()) in player.check_endpoint()
        with pytest.raises(ArenaError, match=f"port {port} already serves an endpoint"):
            with served(base_model_dir, port, tmp_path / "second.log"):
                pass
    assert not _answers(port)


def test_a_missing_model_is_one_error_before_any_server_starts(tmp_path):
    with pytest.raises(ArenaError, match="no model directory .*no-such-model to serve: build it first"):
        with served(tmp_path / "no-such-model", _free_port(), tmp_path / "bad.log"):
            pass
    assert not (tmp_path / "bad.log").exists()


def test_a_replay_at_max_calls_0_starts_no_server(monkeypatch, tmp_path):
    import arena.players.localserver as localserver

    def refuse(*args, **kwargs):
        raise AssertionError("a replay must not start a server")

    monkeypatch.setattr(localserver, "served", refuse)
    evaluation = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [9_000_000, 9_000_002]})
    configs = PlayerConfigs(frontier=FrontierConfig(max_calls=0))
    excluded = run_stage_serving(evaluation, TournamentConfig(players=("random", "first")), [], tmp_path / "cards",
                                 configs, "models/none", _free_port())
    assert excluded == {} and len(list((tmp_path / "cards").glob("*.card.json"))) == 1


def test_the_float32_copy_holds_the_quantised_models_values(tmp_path):
    from arena.players.mlx import load_model

    build_base(BaseConfig(quant="q4"), tmp_path / "q4")
    meta = dequantised_copy(tmp_path / "q4", tmp_path / "f32")
    assert "quantization" not in json.loads((tmp_path / "f32" / "config.json").read_text())
    assert meta["pin"]["quant"] == "none" and (tmp_path / "f32" / "meta.json").is_file()
    quantised, _ = load_model(tmp_path / "q4")
    copy, _ = load_model(tmp_path / "f32")
    expected = float_weights(quantised)
    got = dict(mx.load(str(tmp_path / "f32" / "model.safetensors")))
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        assert got[name].dtype == value.dtype and np.array_equal(np.array(got[name]), np.array(value)), name
    tokens = mx.array([[1, 5, 9, 2]])
    assert np.allclose(np.array(quantised(tokens)), np.array(copy(tokens)), atol=1e-3)
    dequantised_copy(tmp_path / "q4", tmp_path / "again")
    again, first = (tmp_path / name / "model.safetensors" for name in ("again", "f32"))
    assert again.read_bytes() == first.read_bytes()
