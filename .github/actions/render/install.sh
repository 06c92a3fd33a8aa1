#!/usr/bin/env bash
# Step "install": btp-gitops from this action's own checkout, so the CLI always matches the
# action's version, and its dependencies at the versions that checkout's CI tested (constraints.txt).
# The only step that runs anything but btp-gitops and git.
set -euo pipefail

: "${ACTION_ROOT:?ACTION_ROOT is not set}"
python -m pip install --quiet -c "$ACTION_ROOT/constraints.txt" "$ACTION_ROOT"
btp-gitops --version
