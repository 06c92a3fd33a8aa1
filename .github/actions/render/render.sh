#!/usr/bin/env bash
# Step "render": write the render into the GitOps checkout and commit it there. btp-gitops commits
# only when the tree changed, naming the sources' commit in a Source-Commit trailer.
# Outputs: committed (true/false), commit (the new commit, when there is one).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

before=$(git -C "$GITOPS_PATH" rev-parse --verify --quiet HEAD || true)
"$btp_gitops" render "${sources[@]}" --out "$GITOPS_PATH" "${target_args[@]}" "${extra_args[@]}" --commit
after=$(git -C "$GITOPS_PATH" rev-parse --verify --quiet HEAD || true)

if [[ -n $after && $after != "$before" ]]; then
    output committed true
    output commit "$after"
else
    output committed false
fi
