# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are for the scripts that source this file
# Sourced by every step of the render action: the action's inputs (passed by action.yml as
# environment variables, never spliced into the script text) turned into btp-gitops arguments.
set -euo pipefail

: "${SOURCES:?the sources input is required}"
: "${GITOPS_PATH:?the gitops-path input is required}"

# flag NAME VALUE: a true/false input's value, refused when it is anything else.
flag() {
    case $2 in
        true | false) echo "$2" ;;
        *)
            echo "error: the $1 input is true or false, not '$2'" >&2
            return 2
            ;;
    esac
}

# Whitespace-separated lists, newlines included (YAML block scalars); read stops at the end of
# the text, which it reports as a non-zero status.
read -r -d '' -a sources <<<"$SOURCES" || true
read -r -d '' -a extra_args <<<"${EXTRA_ARGS:-}" || true

# An assignment, so that a refused value stops the script (set -e).
emit_wiring=$(flag emit-wiring "${EMIT_WIRING:-false}")
flux_no_wait=$(flag flux-no-wait "${FLUX_NO_WAIT:-false}")

target_args=(--cluster "${CLUSTER:-default}" --target "${TARGET:-argocd}" --revision "${BRANCH:-main}")
if [[ $emit_wiring == true ]]; then
    target_args+=(--emit-wiring --repo-url "${REPO_URL:?the repo-url input is required with emit-wiring}")
fi

# The Argo CD and Flux wiring options: input `name` is the variable NAME (action.yml sets one per
# input) and the option --name of both render and diff, passed only when the input is set, so
# btp-gitops' own defaults and checks apply (e.g. a --flux-* option needs target flux). The
# `--option=value` form keeps a value that starts with a dash a value.
wiring_inputs=(
    argocd-project argocd-namespace argocd-destination-server argocd-destination-name
    argocd-retry-limit argocd-retry-duration argocd-retry-factor argocd-retry-max-duration
    flux-namespace flux-source flux-interval flux-source-interval flux-timeout flux-secret-ref
    flux-service-account
)
for name in "${wiring_inputs[@]}"; do
    variable=${name^^}
    variable=${variable//-/_}
    if [[ -n ${!variable:-} ]]; then
        target_args+=("--$name=${!variable}")
    fi
done
if [[ $flux_no_wait == true ]]; then
    target_args+=(--flux-no-wait)
fi

btp_gitops=${BTP_GITOPS:-btp-gitops}

# output NAME VALUE: a step output, as GitHub Actions reads them.
output() {
    echo "$1=$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
}
