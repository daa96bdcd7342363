"""Backfill the H100 table's incumbent fields from its runs' journals (session 54, run once, kept to show how).

  python benchmarks/results/session54/backfill_incumbents.py   (from the repository root)

Each entry gets the H200 config its study was seeded with and that config's time in the study (the tuner's
``config_time``, None where it was not timed), as ``study_entry`` records them since session 54.
"""
import gzip, json, shutil, sys, tempfile
import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from sparsemla.gen.spec import Config
from sparsemla.gen.tune import config_time
optuna.logging.set_verbosity(optuna.logging.ERROR)
ref = json.load(open("tuned/NVIDIA_H200/sparse_mla.json"))["entries"]
path = "tuned/NVIDIA_H100_80GB_HBM3/sparse_mla.json"
table = json.load(open(path))
# journals, later runs last (the recheck's studies replace the first bf16 run's)
order = ["tune_h100_tune_call1", "tune_h100_tune_call2", "tune_h100_recheck_tune", "tune_h100_fp8_tune",
         "tune_h100_fp8_ds_mla_tune", "tune_h100_model1_tune"]
tmp = tempfile.mkdtemp()
studies = {}
for name in order:
    run, journal = name.rsplit("_tune", 1)
    src = f"benchmarks/results/{run}/tune{journal}.journal.gz"
    with gzip.open(src, "rb") as f, open(f"{tmp}/{name}.journal", "wb") as g:
        shutil.copyfileobj(f, g)
    st = JournalStorage(JournalFileBackend(f"{tmp}/{name}.journal"))
    for s in st.get_all_studies():
        gpu, key, tb, _ = s.study_name.split("/")
        studies[(key, int(tb[1:]))] = optuna.load_study(study_name=s.study_name, storage=st)
n = timed = 0
for key, buckets in table["entries"].items():
    for b, e in buckets.items():
        study = studies[(key, int(b))]
        inc = Config.from_dict(ref[key][b]["config"])
        us = config_time(study, inc)
        best = Config.from_dict(e["config"])
        if best == inc:
            assert us is not None and abs(us - e["time_us"]) < 1e-6 * us, (key, b, us, e["time_us"])
        e["incumbent"], e["incumbent_time_us"] = inc.to_dict(), us
        n += 1; timed += us is not None
print(n, "entries,", timed, "incumbents timed")
from sparsemla.gen.tuned_table import parse_table
from sparsemla.gen.render import atomic_write
from pathlib import Path
sys.path.insert(0, "benchmarks")
from merge_tuned import append_note
if "backfilled" not in table["provenance"].get("template_note", ""):
    append_note(table["provenance"], "incumbent fields (the H200's entry each study was seeded with, and its time there) "
                "backfilled from the runs' journals in session 54")
parse_table(table)
atomic_write(Path(path), json.dumps(table, indent=1) + "\n")
