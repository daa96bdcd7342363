#!/usr/bin/env bash
# The next planned call (prepared at the end of session 34, whose calls all ran on an H100): the float16 split-K
# partials of the narrow Gluon kernel (GluonKernel.parts_f16, off by default) with the merge that session 34 could not
# measure (benchmarks/results/session34/README.md): the combine alone, correctness with it on, then timed against
# float32 on the split rows.
# (What this file held before, session 33's ids_early call, ran as session 34's call 1.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s34j.sh"
