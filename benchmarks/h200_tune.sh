#!/usr/bin/env bash
# One device call of a tuning run: tune the suite for the formats in $FORMATS on the present GPU (the H200's
# run: its default RUN), resuming from $RUN (gzipped journal and partial table, default benchmarks/results/tune_run2/)
# when present, and leaving its journal and table there, so the next run in the same call carries on. The journal is
# kept gzipped (tune.journal.gz, ~25x smaller) because a call carries at most 64 MiB of working tree.
#   FORMATS=bf16,fp8 LIMIT=500 bash benchmarks/h200_tune.sh
#   RUN=benchmarks/results/tune_h100 FORMATS=bf16 bash benchmarks/h200_tune.sh   (an H100's own table)
#   bash benchmarks/h200_tune.sh FORMATS TRIALS LIMIT "TUNE_ARGS"   (the same, as arguments)
# (after: source .whl/prelude.sh && python3 -m pip install .). Results go to $OUT.
set -u
FORMATS=${1:-$FORMATS} TRIALS=${2:-${TRIALS:-8}} LIMIT=${3:-${LIMIT:-500}} TUNE_ARGS=${4:-${TUNE_ARGS:-}}
export PYTHONUNBUFFERED=1 SPARSEMLA_TUNED_DIR="$OUT/tuned"
RUN=${RUN:-benchmarks/results/tune_run2}
GPU=$(python3 -c "import torch; from sparsemla.gen.tuned_table import gpu_dirname; print(gpu_dirname(torch.cuda.get_device_name()))")
mkdir -p "$OUT/tuned/$GPU" "$RUN"
[ -f $RUN/tune.journal.gz ] && gunzip -c $RUN/tune.journal.gz > "$OUT/tune.journal"
[ -f $RUN/sparse_mla.json ] && cp $RUN/sparse_mla.json "$OUT/tuned/$GPU/sparse_mla.json"
start=$(date +%s)
timeout "${LIMIT:-500}" python3 -m sparsemla.cli tune --formats "$FORMATS" ${TUNE_ARGS:-} --trials "${TRIALS:-8}" \
  --parallel "${PARALLEL:-6}" --jobs 16 --max-spill 2048 --timeout 60 --storage "$OUT/tune.journal" \
  --out "$OUT/tuned" >> "$OUT/tune_$(echo $FORMATS | tr , _).log" 2>&1
echo "== tune rc=$? after $(( $(date +%s) - start )) s"
gzip -f "$OUT/tune.journal" && cp "$OUT/tune.journal.gz" $RUN/tune.journal.gz
[ -f "$OUT/tuned/$GPU/sparse_mla.json" ] && cp "$OUT/tuned/$GPU/sparse_mla.json" $RUN/sparse_mla.json
grep -v Warn "$OUT"/tune_*.log | grep "\] best\|Error\|Traceback" | tail -n 40 | cut -c1-260
