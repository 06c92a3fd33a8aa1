# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are for the scripts that source this file
# Sourced by every step of the render action: the action's inputs (passed by action.yml as
# environment variables, never spliced into the script text) turned into btp-gitops arguments.
set -euo pipefail

: "${SOURCES:?the sources input is required}"
: "${GITOPS_PATH:?the gitops-path input is required}"

# Whitespace-separated lists, newlines included (YAML block scalars); read stops at the end of
# the text, which it reports as a non-zero status.
read -r -d '' -a sources <<<"$SOURCES" || true
read -r -d '' -a extra_args <<<"${EXTRA_ARGS:-}" || true

target_args=(--cluster "${CLUSTER:-default}" --target "${TARGET:-argocd}" --revision "${BRANCH:-main}")
if [[ ${EMIT_WIRING:-false} == true ]]; then
    target_args+=(--emit-wiring --repo-url "${REPO_URL:?the repo-url input is required with emit-wiring}")
fi

btp_gitops=${BTP_GITOPS:-btp-gitops}

# output NAME VALUE: a step output, as GitHub Actions reads them.
output() {
    echo "$1=$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
}
