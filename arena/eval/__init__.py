"""Measuring players: per-round evaluation, model policies, tournaments, score cards, ratings, verification."""
