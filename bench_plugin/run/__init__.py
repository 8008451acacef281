"""The run of cases: the runner's loop, preparing and executing a case, scheduling, shards, named runs, re-judging."""
