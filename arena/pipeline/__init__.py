"""The build itself: whole-params validation, the stage runner, the round stages, stage code deps."""
