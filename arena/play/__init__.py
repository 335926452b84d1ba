"""Playing games: the lockstep match runner, rollout shards and their records, match statistics, the reward audit."""
