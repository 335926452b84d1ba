"""Policy files of the games with exact theory: reading their JSON, and the error a malformed policy raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class PolicyError(ValueError):
    """A policy table is malformed (wrong info sets, or probabilities that are not in [0, 1])."""


def read_policy_file(path: str | Path) -> Any:
    """The JSON in a policy file, or a PolicyError naming the file and what is wrong with it."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise PolicyError(f"policy file {str(path)!r} does not exist") from error
    except json.JSONDecodeError as error:
        raise PolicyError(f"policy file {str(path)!r} is not valid JSON: {error}") from error
