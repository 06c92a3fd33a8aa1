#!/usr/bin/env bash
# The project's one test command, for humans and CI alike: set up (idempotent), lint, type-check,
# check the import layering, then run every test, real-component tiers included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-tools
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/mypy --strict scripts/*.py  # the maintainer scripts, outside the package
.venv/bin/lint-imports
.venv/bin/python -m pytest "$@"
