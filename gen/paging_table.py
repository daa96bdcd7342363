"""Tuned tables of the paging kernels: ``tuned/<gpu>/paging.json`` (``gen.paging_tune`` writes them).

File format (version 1)::

    {"version": 1, "gpu": "NVIDIA_H200", "family": "paging",
     "provenance": {"gpu_name", "compute_capability", "driver", "cuda", "torch", "triton",
                    "sparsemla", "template_hash"},      # template_hash: of the paging templates
     "entries": {"<spec key>:<path>": {"<bucket>": {
         "config": {PagingConfig fields; a missing one takes its default},
         "time_us": float,             # the tuned config, CUDA-graph replay median per call
         "default_time_us": float,     # the arch's default config, measured the same way
         "copy_us": float | null,      # page_split: torch copy_ of the bytes it moves, same run
         "workload": str,              # what was measured
         "trials": int, "date": "YYYY-MM-DD"}}}}

A path is one of a spec's kernel paths (``gen.paging.PATHS``), a bucket what that path's size counts
(rows, source pages, ids): a call uses the entry of the nearest bucket not above its size, else the
smallest. A file that is unreadable, malformed or made for other paging templates or another sparsemla
is reported once and skipped; the runtime then runs the arch's defaults. Search path and precedence
as for the attention tables (``tuned_table.table_paths``): the user dir's entries over the package's.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .paging import PagingConfig, check_path, spec_from_key
from .render import atomic_write, template_source
from .tuned_table import _report_once, checked_buckets, software_provenance, table_paths

VERSION = 1
FAMILY = "paging"
PAGING_TEMPLATES = ("convert_indices.py.jinja", "pack_valid_prefix.py.jinja", "page_split.py.jinja",
                    "page_split_tma.py.jinja")


def paging_template_hash() -> str:
    """What a paging table's provenance records: a change to any paging template invalidates it."""
    return hashlib.sha256("\0".join(template_source(n) for n in PAGING_TEMPLATES).encode()).hexdigest()[:16]


def paging_provenance() -> dict:
    return {**software_provenance(), "template_hash": paging_template_hash()}


def entry_key(spec, path: str) -> str:
    return f"{spec.key}:{check_path(spec, path)}"


def split_key(key: str):
    """(spec, path) of an entry key; ValueError naming what is wrong."""
    spec_key, sep, path = str(key).rpartition(":")
    if not sep:
        raise ValueError(f"entry key {key!r}: expected '<spec key>:<path>'")
    spec = spec_from_key(spec_key)
    return spec, check_path(spec, path)


@dataclass(frozen=True)
class PagingEntry:
    config: PagingConfig
    bucket: int
    time_us: float | None = None
    default_time_us: float | None = None
    copy_us: float | None = None
    workload: str = ""
    trials: int = 0
    date: str = ""

    def to_json(self) -> dict:
        return dict(config=self.config.to_dict(), time_us=self.time_us, default_time_us=self.default_time_us,
                    copy_us=self.copy_us, workload=self.workload, trials=self.trials, date=self.date)


def _number(where, name, v):
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
        raise ValueError(f"{where}.{name}={v!r}: expected a non-negative number or null")
    return v


def parse_table(data) -> dict[str, dict[int, PagingEntry]]:
    """Validate a loaded JSON paging table; ValueError says the first thing that is wrong."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("version") != VERSION:
        raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
    if data.get("family") != FAMILY:
        raise ValueError(f"family {data.get('family')!r}, expected {FAMILY!r}")
    if not isinstance(data.get("provenance"), dict) or not isinstance(data.get("entries"), dict):
        raise ValueError("provenance and entries must be objects")
    out = {}
    for key, spec, buckets in checked_buckets(data["entries"], lambda k: split_key(k)[0]):
        out[key] = {}
        for b, e, where in buckets:
            if "config" not in e:
                raise ValueError(f"{where}: missing fields ['config']")
            try:
                cfg = PagingConfig.from_dict(e["config"]).check(spec)
            except (TypeError, ValueError) as err:
                raise ValueError(f"{where}: {err}") from None
            out[key][b] = PagingEntry(
                cfg, b, *(_number(where, n, e.get(n)) for n in ("time_us", "default_time_us", "copy_us")),
                str(e.get("workload", "")), int(e.get("trials") or 0), str(e.get("date", "")))
    return out


def _stale(prov: dict) -> str:
    """Why a table's configs may not mean what this code means by them ("" if they do)."""
    if prov.get("template_hash") != paging_template_hash():
        return f"paging template hash {prov.get('template_hash')} != {paging_template_hash()}"
    cur = software_provenance()["sparsemla"]
    if prov.get("sparsemla") != cur:
        return f"sparsemla {prov.get('sparsemla')} != {cur}"
    return ""


def read_table(path) -> dict[str, dict[int, PagingEntry]]:
    """The entries of one file; {} if it is missing, or (reported once) unusable or stale. Never raises.
    (Configs do not depend on the Triton version: another Triton's table is used as it is.)"""
    try:
        data = json.loads(Path(path).read_text())
        entries = parse_table(data)
        why = _stale(data["provenance"])
    except FileNotFoundError:
        return {}
    except Exception as e:  # unreadable or malformed: the caller runs the defaults
        entries, why = {}, f"{type(e).__name__}: {e}"
    if why:
        _report_once(path, f"ignoring tuned paging table {path}: {why}")
        return {}
    return entries


def load_tables(gpu: str) -> dict[str, dict[int, PagingEntry]]:
    """``gpu``'s paging entries, per bucket the user dir's over the package's."""
    merged: dict[str, dict[int, PagingEntry]] = {}
    for path in table_paths(gpu, FAMILY):
        for key, buckets in read_table(path).items():
            merged.setdefault(key, {}).update(buckets)
    return merged


def write_table(path, gpu: str, entries: dict[str, dict[int, PagingEntry]], provenance: dict) -> Path:
    """Merge ``entries`` into the table at ``path`` (atomic); a stale or bad file's entries are dropped."""
    path = Path(path)
    old = read_table(path) if path.exists() else {}
    for key, buckets in entries.items():
        old.setdefault(key, {}).update(buckets)
    data = dict(version=VERSION, gpu=gpu, family=FAMILY, provenance=provenance,
                entries={k: {str(b): e.to_json() for b, e in sorted(bs.items())} for k, bs in sorted(old.items())})
    atomic_write(path, json.dumps(data, indent=1) + "\n")
    return path
