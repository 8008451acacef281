"""``runs_tests``: the answer's code, run against the task's tests in the sandbox, scored by the tests that passed."""
