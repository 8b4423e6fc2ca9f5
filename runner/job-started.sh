#!/usr/bin/env bash
# The self-hosted runner's job-started hook (ACTIONS_RUNNER_HOOK_JOB_STARTED): refuses every job
# that is not a trusted workflow from the default branch (runner_hook.py, beside this file once
# installed by scripts/install-runner-hook). The runner runs it as `bash -e job-started.sh`; a
# non-zero exit fails the job before its first step. `python3 -I`: nothing in the environment
# (PYTHONPATH, PYTHONSTARTUP, a user site) changes what the check runs.
set -euo pipefail
exec python3 -I "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/runner_hook.py"
