"""Publishing results: the leaderboard, headline metrics and the offline HTML report."""
