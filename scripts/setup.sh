#!/usr/bin/env bash
# Set up a checkout: Python venv with btp-gitops and its test dependencies at the versions of
# constraints.txt, and with --with-tools the Go-built CLIs and Debian packages the test suite runs
# for real, and the pinned third-party CRDs it installs (cached per user: see build-tools.sh).
# Idempotent: a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

with_tools=false
[ "${1:-}" = "--with-tools" ] && with_tools=true

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# constraints.txt (scripts/lock.sh) pins every package, pip included, to one exact version.
stamp=.venv/.btp-gitops-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ] \
  || [ btp_gitops/__init__.py -nt "$stamp" ]; then  # __init__.py: the version in the metadata
  .venv/bin/python -m pip install --quiet -c constraints.txt pip
  .venv/bin/python -m pip install --quiet -c constraints.txt -e '.[test]'
  touch "$stamp"
fi

if $with_tools; then
  # Debian packages the tests run for real: Prometheus (version-cleanup rules).
  if ! command -v prometheus >/dev/null 2>&1; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
  bash scripts/build-tools.sh
  bash scripts/fetch-crds.sh
fi
