#!/usr/bin/env bash
# Step "install": btp-gitops as released, into a virtual environment of its own under
# RUNNER_TEMP (nothing of the workflow's Python is touched, and nothing of it is used).
#   WHEEL    a wheel (or sdist) path to install instead, e.g. one the workflow built;
#   VERSION  else the version from PyPI; empty: this action's own version, so a workflow that
#            calls btp-gitops/btp-gitops/.github/actions/render@v0.1.0 runs btp-gitops 0.1.0.
# The action's constraints.txt, when its checkout has one, pins the dependencies as tested.
# Outputs: btp-gitops (the executable the other steps run), version (what it reports).
set -euo pipefail

: "${ACTION_ROOT:?ACTION_ROOT is not set}"
: "${RUNNER_TEMP:?RUNNER_TEMP is not set}"

if [[ -n ${WHEEL:-} ]]; then
    requirement=$WHEEL
    [[ -f $requirement ]] || { echo "install: no wheel at $requirement" >&2; exit 1; }
else
    version=${VERSION:-}
    if [[ -z $version ]]; then
        version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$ACTION_ROOT/src/btp_gitops/__init__.py")
        [[ -n $version ]] || { echo "install: no __version__ in the action's src/btp_gitops/__init__.py" >&2; exit 1; }
    fi
    requirement="btp-gitops==$version"
fi

constraints=()
if [[ -f $ACTION_ROOT/constraints.txt ]]; then
    constraints=(--constraint "$ACTION_ROOT/constraints.txt")
fi

python=$(command -v python3 || command -v python)
venv=$RUNNER_TEMP/btp-gitops-venv
# The checkout must not shadow the installed package: no inherited PYTHONPATH, and -I (isolated
# mode) keeps the working directory off sys.path.
unset PYTHONPATH PYTHONHOME
"$python" -I -m venv --clear "$venv"
"$venv/bin/python" -I -m pip install --quiet --disable-pip-version-check "${constraints[@]}" "$requirement"

executable=$venv/bin/btp-gitops
reported=$("$executable" --version)
echo "$reported"
output() {
    echo "$1=$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
}
output btp-gitops "$executable"
output version "${reported##* }"
