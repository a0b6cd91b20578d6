#!/usr/bin/env bash
# The test suite in two phases (the README's test command; .ci/run calls it too):
#   1. every test that needs no engine, on $SEATRIAL_TEST_WORKERS pytest-xdist workers (default 2, a file to
#      a worker): most of their time is waiting on synthetic servers' clocks and on subprocesses, so two
#      of them share the 2-core CI host well (on the 2-core host here: 560 s one at a time, 328 s on two workers);
#   2. the real-engine tests (marker ``engine``) and those that read the real clock within a step (marker
#      ``quiet``), one at a time with the host to themselves: their validity gates, capacity searches,
#      experiment starts and step timings read the host's speed, which a parallel worker takes.
# Both phases run (SEATRIAL_TEST_PHASE=1 or 2 runs one of them); the exit status is the first failing
# phase's. Extra arguments go to both: a path or -k that selects no test of one phase leaves that phase with
# nothing to do, which is not a failure; where neither phase selects a test the status is pytest's 5 (no
# tests ran). benchmarks/suite_cpu.py times each phase against the CPU time it used.
set -uo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
phase=${SEATRIAL_TEST_PHASE:-both}
case "$phase" in
  both | 1 | 2) ;;
  *) echo "SEATRIAL_TEST_PHASE must be 1 or 2 (unset: both), got '$phase'" >&2; exit 2 ;;
esac
first=5
second=5
if [ "$phase" != 2 ]; then
  "$py" -m pytest -m "not engine and not quiet" -n "${SEATRIAL_TEST_WORKERS:-2}" --dist loadfile "$@"
  first=$?
fi
if [ "$phase" != 1 ]; then
  "$py" -m pytest -m "engine or quiet" "$@"
  second=$?
fi
for rc in "$first" "$second"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then exit "$rc"; fi
done
if [ "$first" -eq 5 ] && [ "$second" -eq 5 ]; then exit 5; fi
exit 0
