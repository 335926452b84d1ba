"""Prompts through the model's own chat template: views, the thinking switch, and actions scored as the reply."""

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.core.errors import ArenaError
from arena.games.registry import make_game
from arena.players.config import MLXPlayerConfig
from arena.players.mlx import MLXPlayer, load_tokenizer
from arena.players.prompts import (
    SYSTEM_PROMPT,
    ChatPrompts,
    chat_messages,
    prompt_text,
    render,
    reply_text,
)

THINK_BLOCK = "<think>\n\n</think>\n\n"


def _observations():
    kuhn = make_game("kuhn", 0).observation()
    dice = make_game("liarsdice", 3, {"dice": 1}).observation()
    return [kuhn, dice]


@pytest.fixture(scope="module")
def standin_tokenizer(standin_dir):
    return load_tokenizer(standin_dir)


def test_compact_prompts_are_todays_tokens(base_model_dir):
    """The embedded default's compact prompts and actions: the user message alone, the bare action's tokens."""
    tokenizer = load_tokenizer(base_model_dir)
    prompts = ChatPrompts(tokenizer, "compact", enable_thinking=False)
    for observation in _observations():
        expected = tokenizer.apply_chat_template([{"role": "user", "content": observation.compact}],
                                                 add_generation_prompt=True)
        assert prompts.prompt_ids(observation) == tuple(expected)
        for action in observation.legal_actions:
            assert prompts.action_ids(action) == tuple(tokenizer.encode(action, add_special_tokens=False))
    assert prompts.action_ids("[bet]") == (tokenizer.convert_tokens_to_ids("[bet]"),)


def test_full_prompt_has_system_message_observation_and_legal_actions(standin_tokenizer):
    for observation in _observations():
        text = render(standin_tokenizer, chat_messages(observation, "full"), reply=None, enable_thinking=False)
        assert text.startswith(f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n")
        assert observation.text in text
        assert f"Legal actions: {' '.join(observation.legal_actions)}<|im_end|>\n" in text
        assert text.endswith(f"<|im_start|>assistant\n{THINK_BLOCK}")


@pytest.mark.parametrize("thinking", [False, True])
def test_action_tokens_are_the_templates_reply_through_end_of_turn(standin_tokenizer, thinking):
    """prompt + action tokens == the template's conversation with the reply, tokenized whole, up to <|im_end|>."""
    tokenizer = standin_tokenizer
    prompts = ChatPrompts(tokenizer, "full", thinking)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for observation in _observations():
        prompt = prompts.prompt_ids(observation)
        for action in observation.legal_actions:
            reply = prompts.action_ids(action)
            full = render(tokenizer, chat_messages(observation, "full"), reply=action, enable_thinking=thinking)
            whole = tuple(tokenizer.encode(full, add_special_tokens=False))
            assert whole == prompt + reply + tuple(tokenizer.encode("\n", add_special_tokens=False))
            assert reply[-1] == eos
            assert tokenizer.decode(list(reply)) == (THINK_BLOCK if thinking else "") + action + "<|im_end|>"


def test_thinking_switch_changes_the_prompt_as_the_template_says(standin_tokenizer):
    observation = _observations()[0]
    off = ChatPrompts(standin_tokenizer, "full", False).prompt_ids(observation)
    on = ChatPrompts(standin_tokenizer, "full", True).prompt_ids(observation)
    assert off == on + tuple(standin_tokenizer.encode(THINK_BLOCK, add_special_tokens=False))
    text_on = render(standin_tokenizer, chat_messages(observation, "full"), reply=None, enable_thinking=True)
    assert text_on.endswith("<|im_start|>assistant\n")


def test_templates_without_a_switch_ignore_it(base_model_dir):
    tokenizer = load_tokenizer(base_model_dir)
    for view in ("compact", "full"):
        observation = _observations()[0]
        assert ChatPrompts(tokenizer, view, False).prompt_ids(observation) == \
            ChatPrompts(tokenizer, view, True).prompt_ids(observation)


def test_embedded_full_view_scores_the_action_then_end_of_turn(base_model_dir):
    tokenizer = load_tokenizer(base_model_dir)
    ids = ChatPrompts(tokenizer, "full", False).action_ids("[bet]")
    assert ids == (tokenizer.convert_tokens_to_ids("[bet]"), tokenizer.convert_tokens_to_ids("<|im_end|>"))


class _Template:
    """A tokenizer stand-in whose chat template is a Python function."""

    def __init__(self, fn):
        self.fn = fn

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False, enable_thinking=False):
        return self.fn(messages, add_generation_prompt)


def test_a_reply_that_does_not_extend_the_prompt_is_refused():
    def fn(messages, generation):
        return "PROMPT>" if generation else "OTHER " + messages[-1]["content"]

    with pytest.raises(ArenaError, match="does not extend its own generation prompt"):
        reply_text(_Template(fn), [{"role": "user", "content": "x"}], "[bet]", False)


def test_a_reply_that_depends_on_the_conversation_is_refused():
    def fn(messages, generation):
        head = "|".join(m["content"] for m in messages if m["role"] != "assistant") + ">"
        if generation:
            return head
        return head + f"{len(head)}:" + messages[-1]["content"] + "<|im_end|>"

    class Tok(_Template):
        eos_token_ids = {0}
        all_special_ids = [0]

        def encode(self, text, add_special_tokens=False):
            return [ord(c) for c in text]

    prompts = ChatPrompts(Tok(fn), "full", False)
    with pytest.raises(ArenaError, match="one rendering per action"):
        prompts.prompt_ids(_observations()[0])


def test_player_full_view_on_the_standin_is_a_distribution(standin_dir):
    player = MLXPlayer(standin_dir, MLXPlayerConfig(view="full"))
    observation = _observations()[0]
    (probs,) = player.policy([observation])
    assert probs.shape == (2,) and abs(probs.sum() - 1) < 1e-6
    assert player.pin()["config_hash"] != MLXPlayer(standin_dir, MLXPlayerConfig(view="full", enable_thinking=True)
                                                    ).pin()["config_hash"]
    assert prompt_text(observation, "full").endswith("Legal actions: [check] [bet]")


def test_cli_prompt_prints_the_rendered_prompt_and_token_counts(standin_dir):
    result = CliRunner().invoke(main, ["prompt", "kuhn", "--model", str(standin_dir), "--view", "full",
                                       "--seed", "0"])
    assert result.exit_code == 0, result.output
    assert f"<|im_start|>system\n{SYSTEM_PROMPT}" in result.output
    assert "prompt: " in result.output and "tokens (kuhn, player 1, view full, thinking off)" in result.output
    assert "  [check]: 3 tokens" in result.output and "  [bet]: 3 tokens" in result.output
    thinking = CliRunner().invoke(main, ["prompt", "kuhn", "--model", str(standin_dir), "--view", "full",
                                         "--thinking"])
    assert "thinking on" in thinking.output and "  [bet]: 7 tokens" in thinking.output


def test_cli_prompt_errors_are_one_line(standin_dir, tmp_path):
    result = CliRunner().invoke(main, ["prompt", "kuhn", "--model", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "model directory not found" in result.output
    result = CliRunner().invoke(main, ["prompt", "liarsdice", "--model", str(standin_dir), "--variant", "dice=0"])
    assert result.exit_code == 2 and "Traceback" not in result.output
