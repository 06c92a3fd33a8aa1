#!/usr/bin/env bash
# Step "diff": what the sources render to, compared with the GitOps repo's last commit (or with
# its empty work tree before the first one), as markdown for a pull-request comment. The cluster
# may not be rendered yet (the first run, or a new cluster): --new-cluster shows it all as added;
# the workflow's inputs are the options the render step uses next, so a change of --target or
# --emit-wiring there is meant: --allow-layout-change shows it.
# Outputs: changed (true/false), body-file (the markdown).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

body_file=${RUNNER_TEMP:?RUNNER_TEMP is not set}/btp-gitops-diff-${CLUSTER:-default}.md
if git -C "$GITOPS_PATH" rev-parse --verify --quiet HEAD >/dev/null; then
    against=(--against HEAD --repo "$GITOPS_PATH")
else
    against=(--against "$GITOPS_PATH")
fi

status=0
"$btp_gitops" diff "${sources[@]}" "${against[@]}" "${target_args[@]}" "${extra_args[@]}" \
    --new-cluster --allow-layout-change \
    --output markdown --max-length "${MAX_LENGTH:-60000}" --exit-code >"$body_file" || status=$?
case $status in
    0) changed=false ;;
    1) changed=true ;;
    *) exit "$status" ;; # an error: btp-gitops has printed why
esac

output changed "$changed"
output body-file "$body_file"
