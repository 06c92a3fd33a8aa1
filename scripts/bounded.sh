#!/usr/bin/env bash
# bounded.sh SECONDS COMMAND...: run COMMAND; at SECONDS, interrupt it as Ctrl-C would (SIGINT,
# so pytest still prints its summary of what failed so far), and kill it 120 s later if it is
# still running. The exit status is COMMAND's, or 124 when it was interrupted (then a line on
# stderr says so). scripts/test.sh bounds each pytest run with it.
#
# --foreground: COMMAND stays in the caller's process group, so Ctrl-C at a terminal still reaches
# it (and pytest-xdist's workers get theirs from the pytest they belong to).
set -uo pipefail
if [ "$#" -lt 2 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bounded.sh SECONDS COMMAND... (SECONDS: a whole number, 1 or more)" >&2
  exit 2
fi
limit=$1
shift
status=0
timeout --foreground --signal=INT --kill-after=120 "$limit" "$@" || status=$?
if [ "$status" -eq 124 ]; then
  echo "bounded.sh: stopped after ${limit} s: $1 ran over its bound (a hang?)" >&2
fi
exit "$status"
