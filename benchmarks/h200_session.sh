#!/usr/bin/env bash
# The next planned call (prepared at the end of session 33, whose calls all ran on an H100): GluonKernel.ids_early, the
# candidate session 33 could not run (tile 0's slot ids loaded before topk_len; benchmarks/results/session33/README.md):
# its correctness in every bf16 Gluon case, then timed against the shipped kernel with and without topk_length.
# (What this file held before, the H200 bench of the rows session 30's defaults changed, has run: sessions 30 and 32.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s33e.sh" "" full
