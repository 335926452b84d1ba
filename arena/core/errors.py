"""The base class of errors a user can fix (bad params, unknown game, missing model); the CLI prints them plainly."""


class ArenaError(ValueError):
    """An error caused by input the user can fix; its message names the problem and the fix."""
