#!/usr/bin/env bash
# Step "push" (mode commit): the render's commit to the GitOps repo's branch. A concurrent push
# makes this fail rather than overwrite it; the next run renders on top of it.
set -euo pipefail

: "${GITOPS_PATH:?the gitops-path input is required}"
git -C "$GITOPS_PATH" push origin "HEAD:refs/heads/${BRANCH:-main}"
