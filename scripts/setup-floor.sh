#!/usr/bin/env bash
# The floor venv (.venv-floor): btp-gitops with every direct dependency at the floor declared in
# pyproject.toml (constraints-floor.txt) and everything else at the pins of constraints.txt, so the
# floor tier of scripts/test.sh shows that the lowest versions we accept really work.
#
# Editable, like .venv: the tests and the `btp-gitops` script run the checkout's code through the
# editable install (as btp_gitops.*; pytest puts nothing of the checkout on sys.path), so a wheel
# copy would add nothing but a reinstall after every source change. The built wheel in a clean venv
# has its own test.
# Idempotent: reinstalls only when pyproject.toml, setup.py, a constraints file, the version (in
# src/btp_gitops/__init__.py) or the list of package files (scripts/package-files.sh: the strict
# editable install links each file, see scripts/setup.sh) changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
venv=.venv-floor
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp=$venv/.btp-gitops-installed
files=$(bash scripts/package-files.sh)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
  || [ constraints.txt -nt "$stamp" ] || [ constraints-floor.txt -nt "$stamp" ] \
  || [ src/btp_gitops/__init__.py -nt "$stamp" ] || [ "$(cat "$stamp")" != "$files" ]; then
  # One constraints file: the floors, then the lock without the packages the floors name.
  floors=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]*==.*//' constraints-floor.txt \
    | tr 'A-Z_.' 'a-z--')
  {
    grep -v '^#' constraints-floor.txt | sed '/^[[:space:]]*$/d'
    grep -v '^#' constraints.txt | while IFS= read -r pin; do
      name=$(printf '%s' "${pin%%==*}" | tr 'A-Z_.' 'a-z--')
      grep -qxF "$name" <<<"$floors" || printf '%s\n' "$pin"
    done
  } >"$venv/constraints.txt"
  "$venv/bin/python" -m pip install --quiet -c "$venv/constraints.txt" pip
  "$venv/bin/python" -m pip install --quiet -c "$venv/constraints.txt" -e '.[test]' \
    --config-settings editable_mode=strict
  printf '%s\n' "$files" >"$stamp"
fi
