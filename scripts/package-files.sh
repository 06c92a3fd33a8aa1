#!/usr/bin/env bash
# A hash of the list of files in the folders pyproject.toml maps into btp_gitops (names, not contents):
# scripts/setup.sh and scripts/setup-floor.sh keep it in their install stamp, because the strict
# editable install lists every file it links, so a module added or removed (a module split into a
# package) needs the install again. Reads the folders, not Git: a new file counts before its commit.
set -euo pipefail
cd "$(dirname "$0")/.."
find src/btp_gitops generator controller schemas charts module-resources examples \
  -name __pycache__ -prune -o -type f -print | LC_ALL=C sort | sha256sum | cut -d' ' -f1
