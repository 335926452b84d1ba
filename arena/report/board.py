"""The leaderboard `arena leaderboard` shows: the published leaderboard.json when it was built from exactly the
archives' cards (the report stage derives it from them), else rebuilt from the score cards."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.eval.scorecards import CARD_SUFFIX

# Card files are named <game>-<the digest's first 24 hex digits>.card.json (arena.eval.scorecards).
_CARD_NAME = re.compile(r"-([0-9a-f]{24})" + re.escape(CARD_SUFFIX) + "$")
PUBLISHED = Path("artifacts/scores/leaderboard.json")


def archive_digests(archives: Sequence[str | Path]) -> set[str]:
    """The digest prefixes of every card file in ``archives``, read from the file names alone."""
    found = set()
    for directory in archives:
        for path in Path(directory).glob(f"*{CARD_SUFFIX}"):
            if match := _CARD_NAME.search(path.name):
                found.add(match.group(1))
    return found


def published_leaderboard(archives: Sequence[str | Path], published: str | Path = PUBLISHED) -> dict[str, Any] | None:
    """``published`` when it lists exactly the archives' cards, else None (it is missing or out of date)."""
    path = Path(published)
    if not path.is_file():
        return None
    try:
        board = json.loads(path.read_text(encoding="utf-8"))
        cards = {digest[:24] for digest in board["cards"]}
    except (ValueError, KeyError, TypeError):
        return None
    return board if cards and cards == archive_digests(archives) else None


def leaderboard_for(archives: Sequence[str | Path], published: str | Path = PUBLISHED) -> dict[str, Any]:
    """The archives' leaderboard: the published one when it is current (no rating is recomputed), else rebuilt
    from the cards, each verified."""
    board = published_leaderboard(archives, published)
    if board is not None:
        return board
    from arena.report.publish import leaderboard_from

    return leaderboard_from(archives)
