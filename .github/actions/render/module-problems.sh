#!/usr/bin/env bash
# Step "module-problems" (fail-on-module-problems, the default): the render had Kyma module problems
# (exit 9). It ran after the render was pushed or its pull request opened, so the modules that could
# be rendered reach the cluster; this step then fails the job, so the problems are not missed. The
# render step's warning annotations name each one.
set -euo pipefail

echo "::error title=btp-gitops render::some Kyma modules could not be resolved and keep their previous files (see the warnings of the render step; fail-on-module-problems: false lets the job pass)"
exit 1
