#!/usr/bin/env bash
# The project's one test command, for humans and CI alike: set up (idempotent), lint, type-check,
# check the import layering, build the docs site (strict: a broken link or anchor fails), then run
# every test, real-component tiers included. Without arguments the floor tier follows
# (scripts/setup-floor.sh); arguments go to the first pytest run only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-tools
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/mypy --strict scripts/*.py  # the maintainer scripts, outside the package
.venv/bin/lint-imports
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet  # into build/site/ (mkdocs.yml), git-ignored
.venv/bin/python -m pytest "$@"

if [ "$#" -eq 0 ]; then
  # Floor tier: every direct dependency at its declared floor (constraints-floor.txt). The unit
  # tier, then the real-API-server tests of what the unit tier does not reach: the Kubernetes
  # client (kubernetes, urllib3), bearer tokens and client certificates (PyJWT, cryptography) and
  # the metrics endpoint (prometheus-client), the subscription server's HTTP stack (aiohttp), and
  # the version-cleanup queries against a real Prometheus (marked tools for the binary, not for a
  # dependency of ours). Left out: the tests of the built wheel, which install it into venvs of their
  # own with constraints.txt, so they would only repeat the first run; and the image, built with
  # constraints.txt too.
  bash scripts/setup-floor.sh
  .venv-floor/bin/python -m pytest -p no:cacheprovider -m "not kube and not tools" \
    --ignore=tests/product --ignore=tests/packaging/test_installed_extras.py \
    --ignore=tests/actions/test_render_action_installed.py
  .venv-floor/bin/python -m pytest -p no:cacheprovider \
    tests/controller/test_kube_client.py \
    tests/controller/subscription/test_bearer_auth.py \
    tests/controller/subscription/test_certificate_auth.py \
    tests/controller/subscription/test_routes.py \
    tests/controller/subscription/test_attacks.py \
    tests/controller/version_cleanup/test_rules.py \
    tests/controller/version_cleanup/test_prometheus_client.py
fi
