"""Red-team attacks on grading integrity (issue 9): real chain runs on the toy chain."""
