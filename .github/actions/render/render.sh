#!/usr/bin/env bash
# Step "render": write the render into the GitOps checkout and commit it there. btp-gitops commits
# only when the tree changed, naming the sources' commit in a Source-Commit trailer.
#
# Exit 9 is a render with Kyma module problems: the render is written and committed all the same
# (the modules that cannot be resolved keep their previous files, the others move on), so this step
# succeeds and the commit is pushed or proposed like any other; each problem becomes a warning
# annotation, and the module-problems step fails the job afterwards unless
# fail-on-module-problems is false. Any other non-zero status fails the step.
# Outputs: committed (true/false), commit (the new commit, when there is one), module-problems
# (true/false).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

fail_on_module_problems=$(flag fail-on-module-problems "${FAIL_ON_MODULE_PROBLEMS:-true}")
errors=${RUNNER_TEMP:?RUNNER_TEMP is not set}/btp-gitops-render-${CLUSTER:-default}.stderr

before=$(git -C "$GITOPS_PATH" rev-parse --verify --quiet HEAD || true)
status=0
"$btp_gitops" render "${sources[@]}" --out "$GITOPS_PATH" "${target_args[@]}" "${extra_args[@]}" --commit \
    2>"$errors" || status=$?
cat "$errors" >&2
case $status in
    0) problems=false ;;
    9) problems=true ;;
    *) exit "$status" ;; # an error: btp-gitops has printed why
esac
after=$(git -C "$GITOPS_PATH" rev-parse --verify --quiet HEAD || true)

if [[ -n $after && $after != "$before" ]]; then
    output committed true
    output commit "$after"
else
    output committed false
fi
output module-problems "$problems"

# escape TEXT: TEXT as the message of a workflow command (one line on the runner).
escape() {
    local text=${1//'%'/'%25'}
    text=${text//$'\r'/'%0D'}
    printf '%s\n' "${text//$'\n'/'%0A'}"
}

if [[ $problems == true ]]; then
    # btp-gitops names each problem on its own indented line after its warning line.
    while IFS= read -r line; do
        if [[ $line == "  "* ]]; then
            echo "::warning title=Kyma module not resolved::$(escape "${line#  }")"
        fi
    done <"$errors"
    if [[ $fail_on_module_problems == true ]]; then
        how="the job fails after the render is pushed or proposed (fail-on-module-problems)"
    else
        how="fail-on-module-problems is false: the job goes on"
    fi
    echo "::warning title=btp-gitops render::$(escape "rendered with Kyma module problems; those modules keep their previous files, the rest is committed; $how")"
fi
