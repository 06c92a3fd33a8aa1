#!/usr/bin/env bash
# Set up a checkout: Python venv with btp-gitops, its test dependencies and the documentation tools
# (mkdocs, the `docs` extra) at the versions of constraints.txt, and with --with-tools the Go-built
# CLIs and Debian packages the test suite runs for real, and the pinned third-party CRDs it installs
# (cached per user: see build-tools.sh).
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
# The install is editable in setuptools' strict mode: the venv sees the tree that pyproject.toml's
# package-dir maps (generator/ as btp_gitops/generator, ...) as a tree of files under
# build/__editable__.*, which mypy and lint-imports read by folder. Its files follow the checkout's
# edits; a module added or removed needs the install again, so the stamp holds the list of package
# files (scripts/package-files.sh) and a changed list reinstalls.
stamp=.venv/.btp-gitops-installed
files=$(bash scripts/package-files.sh)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
  || [ constraints.txt -nt "$stamp" ] || [ src/btp_gitops/__init__.py -nt "$stamp" ] \
  || [ "$(cat "$stamp")" != "$files" ]; then  # __init__.py: the version in the metadata
  .venv/bin/python -m pip install --quiet -c constraints.txt pip
  .venv/bin/python -m pip install --quiet -c constraints.txt -e '.[test,docs]' \
    --config-settings editable_mode=strict
  printf '%s\n' "$files" >"$stamp"
fi

if $with_tools; then
  # Debian packages the tests run for real, installed system-wide (so scripts/test.sh installs
  # them too, with sudo when not root): Prometheus (version-cleanup rules); mmdebstrap, umoci,
  # curl and the Debian archive keyring for scripts/build-image.sh (the OCI image tests); zsh and
  # fish, whose shells check the completion scripts (tests/cli/test_completion.py).
  missing=()
  command -v zsh >/dev/null 2>&1 || missing+=(zsh)
  command -v fish >/dev/null 2>&1 || missing+=(fish)
  command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
  command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
  command -v umoci >/dev/null 2>&1 || missing+=(umoci)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
  if [ ${#missing[@]} -gt 0 ]; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  bash scripts/build-tools.sh
  bash scripts/fetch-crds.sh
fi
