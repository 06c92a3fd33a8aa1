#!/usr/bin/env bash
# The project's one test command, for humans and CI alike: set up (idempotent), lint, type-check,
# check the import layering, build the docs site (strict: a broken link or anchor fails), then run
# every test, real-component tiers included, and without arguments the floor tier; at the end (also
# when a phase fails) a table of how long each phase took.
#
# The tests run on every core with pytest-xdist (tests/support/parallel.py): one worker per core
# (nproc), or BTP_GITOPS_TEST_WORKERS of them (1: no workers, one process). The few tests marked
# `serial` (a wall-clock bound another worker could break) run after that, alone. Arguments go to
# both main pytest runs, not to the floor tier, which runs only without arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

workers=${BTP_GITOPS_TEST_WORKERS:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)}
if ! [[ $workers =~ ^[1-9][0-9]*$ ]]; then
  echo "test.sh: BTP_GITOPS_TEST_WORKERS must be a whole number of workers, 1 or more (got '$workers')" >&2
  exit 2
fi
parallel=(-n "$workers")
[ "$workers" -eq 1 ] && parallel=(-n 0)
# The property tests run derandomized here, so one commit gets one verdict (tests/conftest.py);
# pytest run directly explores new random inputs.
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"

# --- phases and their times ---------------------------------------------------------------------
phase_rows=()
current_phase=""
current_start=0

phase() {  # phase NAME COMMAND...: run COMMAND as the phase NAME, timed
  current_phase=$1
  current_start=$SECONDS
  shift
  "$@"
  phase_rows+=("$(printf '%-34s %7d  %s' "$current_phase" $((SECONDS - current_start)) ok)")
  current_phase=""
}

print_phases() {
  local status=$?
  if [ -n "$current_phase" ]; then
    phase_rows+=("$(printf '%-34s %7d  %s' "$current_phase" $((SECONDS - current_start)) "failed ($status)")")
  fi
  printf '\n%-34s %7s  %s\n' "phase" "seconds" "result"
  printf '%s\n' "${phase_rows[@]}"
  printf '%-34s %7d  %s\n' "total" "$SECONDS" "$([ "$status" -eq 0 ] && echo ok || echo "failed ($status)")"
  printf 'pytest workers: %s (BTP_GITOPS_TEST_WORKERS)\n' "$workers"
}
trap print_phases EXIT

# Two bounds on a hang. pyproject.toml's per-test `timeout` fails a test that runs over it, with
# the stacks of its threads, and the run goes on. This one bounds the pytest runs as a whole (a
# hang that bound cannot interrupt: in a worker's exit, in xdist itself): each gets the time left
# until BTP_GITOPS_TEST_DEADLINE seconds after this script started (85 minutes: CI allows 90),
# and is then interrupted as Ctrl-C would (scripts/bounded.sh), so pytest still prints its
# summary of what failed so far before CI's own limit ends the job without one. A slow machine
# loses nothing by it: a run cut here could not have finished within CI's limit either.
deadline=${BTP_GITOPS_TEST_DEADLINE:-5100}
if ! [[ $deadline =~ ^[1-9][0-9]*$ ]]; then
  echo "test.sh: BTP_GITOPS_TEST_DEADLINE must be a whole number of seconds (got '$deadline')" >&2
  exit 2
fi
bounded() {  # bounded COMMAND...: COMMAND, interrupted at the deadline (a minute at least)
  local left=$((deadline - SECONDS))
  [ "$left" -lt 60 ] && left=60
  bash scripts/bounded.sh "$left" "$@"
}

# pytest exits 5 when it selected no test: for one of the two main runs that is expected (the
# arguments named only serial tests, or none), for both it means nothing ran.
main_runs_empty=0
pytest_main() {
  local status=0
  bounded .venv/bin/python -m pytest --durations=15 "$@" || status=$?
  if [ "$status" -eq 5 ]; then
    main_runs_empty=$((main_runs_empty + 1))
    [ "$main_runs_empty" -lt 2 ] && return 0
  fi
  return "$status"
}

lint() {
  .venv/bin/ruff check .
  .venv/bin/ruff format --check .
}

types() {
  .venv/bin/mypy
  .venv/bin/mypy --strict scripts/*.py  # the maintainer scripts, outside the package
  .venv/bin/mypy --strict bench  # the benchmarks
}

# Floor tier: every direct dependency at its declared floor (constraints-floor.txt), run through the
# tests that exercise the dependencies whose floor differs from their pin in constraints.txt. The
# rest of the suite would run the same code against the same pins as the main run, only slower.
# What each part is here for:
#   PyYAML 6.0.3 (pin 6.0.4): the YAML reader and writer (test_yamlio.py, test_yaml_block_writer.py,
#     test_yaml_resolution.py, with their fuzzers) and rendered output byte for byte (the snapshots
#     of the BTP operator, Kyma and CAP examples: test_render_example.py, test_render_examples.py).
#   jsonschema 4.23 (4.26), referencing 0.31 (0.37): schema validation of the inputs
#     (test_validation.py, tests/validate/test_rules.py, test_shipped_schemas.py, test_render_errors.py).
#   cryptography 42 (50.0.2): keys and certificates (test_keys.py, tests/certificates) and client
#     certificates of the subscription server (test_certificate_auth.py).
#   semver 3.0 (3.1.2): module and CAP version selection (tests/kyma/test_resolution.py, the CAP
#     examples) and version cleanup (tests/controller/version_cleanup/test_candidates.py, test_rules.py).
#   GitPython 3.1.40 (3.2.1): the controller's Git writer (test_gitstore.py, test_writer_batches.py,
#     test_quick_rebase.py) and the generator's (render --commit: test_layout_migration.py; diff
#     against a Git revision: tests/diff/test_diff_cli.py).
#   helm-python-sdk 0.2.1 (0.2.2): the chart engine (test_helm_worker_limits.py,
#     tests/module_resources/test_module_resources.py, the BTP operator example).
#   kubernetes 37.0.0 (37.0.2): the Kubernetes client (test_kube_client.py) and post-render
#     --from-cluster (tests/post_render/test_from_cluster.py).
#   PyJWT 2.9 (2.15.1): bearer tokens (test_bearer_auth.py).
#   prometheus-client 0.12 (0.26): the controller's metrics (test_runtime.py) and the subscription
#     server's /metrics, read as text (test_routes.py::test_metrics).
#   orjson 3.9.15 (3.13.0): the render pack's index, written and read back (test_render_pack.py).
#   pytest 8.0, syrupy 5, hypothesis 6.100: all of the above (with snapshots and fuzzers, in parallel)
#     and the plugins of tests/support (test_tiers.py, test_parallel.py).
# Not here: ruff, mypy and the type stubs (lint tools; the lint phases run the pins);
# kubernetes-validate, aiohttp, urllib3, import-linter, pytest-xdist, pytest-timeout, mkdocs,
# mkdocs-material (their floor is their pin).
FLOOR_TESTS=(
  tests/unit/test_yamlio.py
  tests/unit/test_yaml_block_writer.py
  tests/unit/test_yaml_resolution.py
  tests/unit/test_validation.py
  tests/unit/test_keys.py
  tests/unit/test_helm_worker_limits.py
  tests/unit/test_tiers.py
  tests/unit/test_parallel.py
  tests/render/test_render_example.py
  tests/kyma/test_render_example.py
  tests/cap/test_render_examples.py
  tests/validate/test_rules.py
  tests/validate/test_shipped_schemas.py
  tests/render/test_render_errors.py
  tests/certificates
  tests/controller/subscription/test_certificate_auth.py
  tests/kyma/test_resolution.py
  tests/controller/version_cleanup/test_candidates.py
  tests/controller/version_cleanup/test_rules.py
  tests/controller/test_gitstore.py
  tests/controller/test_writer_batches.py
  tests/controller/test_quick_rebase.py
  tests/render/test_layout_migration.py
  tests/diff/test_diff_cli.py
  tests/module_resources/test_module_resources.py
  tests/controller/test_kube_client.py
  tests/post_render/test_from_cluster.py
  tests/controller/subscription/test_bearer_auth.py
  tests/controller/test_runtime.py
  tests/controller/subscription/test_routes.py::test_metrics
  tests/render/test_render_pack.py
)

floor_tests() {
  bounded .venv-floor/bin/python -m pytest -p no:cacheprovider "${parallel[@]}" "${FLOOR_TESTS[@]}"
}

phase "setup and tools" bash scripts/setup.sh --with-tools
phase "lint (ruff)" lint
phase "types (mypy)" types
phase "import contracts (lint-imports)" .venv/bin/lint-imports
# into build/site/ (mkdocs.yml), git-ignored
phase "docs build (mkdocs)" env NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
phase "main tests, parallel" pytest_main "${parallel[@]}" --serial-tests=skip "$@"
phase "main tests, serial" pytest_main --serial-tests=only "$@"
if [ "$#" -eq 0 ]; then
  phase "floor setup" bash scripts/setup-floor.sh
  phase "floor tests" floor_tests
fi
