#!/bin/sh
# Thin wrapper so the suite can be started as bench/run.sh [options];
# all the work is in run.py (python3, standard library only).
exec python3 "$(dirname "$0")/run.py" "$@"
