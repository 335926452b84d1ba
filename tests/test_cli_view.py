"""The CLI's --view default: a chat model (a chat template of its own) plays the full view, arena's seeded models
the compact one."""

import json
import shutil

from click.testing import CliRunner

from arena.cli import main
from arena.cli_view import resolve_view
from arena.players.prompts import SYSTEM_PROMPT

# A pretrained chat model's kind of template: ChatML with a default system message (SmolLM2's shape).
CHAT_TEMPLATE = ("{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                 "{% endif %}{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def chat_model(base_model_dir, tmp_path):
    """The embedded model's weights under a pretrained chat model's template."""
    out = tmp_path / "chat"
    shutil.copytree(base_model_dir, out)
    config = json.loads((out / "tokenizer_config.json").read_text())
    (out / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": CHAT_TEMPLATE}))
    return out


def test_a_chat_model_gets_the_full_view_by_default_and_a_seeded_model_the_compact(base_model_dir, standin_dir,
                                                                                    tmp_path, capsys):
    chat = chat_model(base_model_dir, tmp_path)
    assert resolve_view(None, [base_model_dir]) == "compact"
    assert resolve_view(None, [standin_dir]) == "compact"
    assert capsys.readouterr().err == ""
    assert resolve_view(None, [base_model_dir, chat]) == "full"
    assert "view: full" in capsys.readouterr().err
    assert resolve_view("compact", [chat]) == "compact"


def test_arena_prompt_and_play_show_a_chat_model_the_full_view(base_model_dir, tmp_path):
    chat = chat_model(base_model_dir, tmp_path)
    shown = CliRunner().invoke(main, ["prompt", "kuhn", "--model", str(chat)])
    assert shown.exit_code == 0, shown.output
    assert "view full" in shown.output and f"<|im_start|>system\n{SYSTEM_PROMPT}" in shown.output
    embedded = CliRunner().invoke(main, ["prompt", "kuhn", "--model", str(base_model_dir)])
    assert "view compact" in embedded.output
    played = CliRunner().invoke(main, ["play", "kuhn", "--p0", f"mlx:{chat}", "--p1", "random", "--games", "2",
                                       "--json"])
    assert played.exit_code == 0, played.output
    assert "[arena] view: full" in played.output
    assert "view:" not in CliRunner().invoke(main, ["play", "kuhn", "--p0", f"mlx:{base_model_dir}", "--p1",
                                                    "random", "--games", "2", "--json"]).output
