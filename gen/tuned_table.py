"""Tuned-config tables: ``tuned/<gpu>/<family>.json``.

File format (version 1)::

    {"version": 1, "gpu": "NVIDIA_H200", "family": "sparse_mla",
     "provenance": {"gpu_name", "compute_capability", "driver", "cuda", "torch", "triton",
                    "flashinfer", "sparsemla", "template_hash"},
     "entries": {"<spec key>": {"<bucket>": {
         "config": {block_h, block_n, num_splits, num_warps, num_stages},
         "time_us": float | null,             # our kernel, CUDA-graph replay median (the tuner's)
         "default_time_us": float | null,     # the arch's default config, measured the same way
         "triton_bench_us": float | null,     # our kernel, do_bench median (L2 cleared per call)
         "flashinfer_time_us": float | null,  # FlashInfer the same way as triton_bench_us, same
                                              # run, where it supports the spec (checked first)
         "backend": "triton" | "flashinfer",  # the faster of the two by do_bench
         "trials": int, "date": "YYYY-MM-DD", "source": "tuned" | "static"}}}}

A bucket is a number of query tokens; a call with T tokens uses the entry of the nearest
bucket not above T, else the smallest (``bucket_for``). A file that is unreadable,
malformed, or made for other code (template hash or sparsemla version differ) is reported once
and ignored. A file made with another Triton major.minor holds configs that still run (the
template is the same) but were timed with another compiler: it is reported once and its
entries are used where no table of this Triton has one (``load_tables``; a user on a newer
torch should not fall back to untuned defaults). Search path: the package's ``tuned/``, then
the user dir (``$SPARSEMLA_TUNED_DIR``, default ``$XDG_CONFIG_HOME/sparsemla/tuned`` or
``~/.config/sparsemla/tuned``), whose entries take precedence.
"""
from __future__ import annotations

import bisect
import datetime
import json
import logging
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .render import atomic_write, attention_template_hash
from .spec import Config, KernelSpec

log = logging.getLogger("sparsemla")
VERSION = 1
BUCKETS = tuple(1 << i for i in range(13))  # 1, 2, 4, ..., 4096 query tokens
BACKENDS = ("triton", "flashinfer")
SOURCES = ("tuned", "static")

# Marketing names of one chip -> one table. Matched as the whole name or a prefix followed
# by a space. Parts with different SM counts or memory (H100 PCIe vs SXM, GH200) stay apart.
GPU_ALIASES = (
    ("NVIDIA H200", "NVIDIA_H200"),  # "NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA H200 SXM 141GB"
    ("NVIDIA GH200", "NVIDIA_GH200"),
    ("NVIDIA RTX PRO 6000 Blackwell", "NVIDIA_RTX_PRO_6000_Blackwell"),  # Workstation/Server/Max-Q
    ("NVIDIA GB10", "NVIDIA_GB10"),
)
# Where a static (compile-checked, unmeasured) table is built for an arch we cannot run here.
STATIC_GPUS = {"sm120": "NVIDIA_RTX_PRO_6000_Blackwell", "sm121": "NVIDIA_GB10"}
# Each arch's reference part: the table a GPU of that arch (the same compute capability) runs where its own
# has no entry, e.g. an H800 or H20 the H200's (an H100 for the specs its own table lacks). Its configs run on
# any such part; its split counts were chosen for the reference part's SMs, so a GPU's own tuning
# (`sparsemla tune`) can still gain.
REFERENCE_GPUS = {"sm90": "NVIDIA_H200", **STATIC_GPUS}
# Parts with a tuned sibling: the same silicon with the same SM count, clocks and memory (an export SKU), whose
# table a GPU runs before its arch's reference part's where its own has no entry. The H800 SXM is an H100 SXM
# with slower NVLink and FP64, neither of which these kernels use.
SIBLING_GPUS = {"sm90": {"NVIDIA_H800": "NVIDIA_H100_80GB_HBM3", "NVIDIA_H800_80GB_HBM3": "NVIDIA_H100_80GB_HBM3"}}


def stand_in_gpus(gpu: str, arch: str) -> tuple[str, ...]:
    """The GPUs whose tables ``gpu`` runs for ``arch``'s specs where its own has no entry, best first: its
    sibling part's (``SIBLING_GPUS``), then the arch's reference part's."""
    found = (SIBLING_GPUS.get(arch, {}).get(gpu), REFERENCE_GPUS.get(arch))
    return tuple(dict.fromkeys(g for g in found if g and g != gpu))


def stand_in_role(gpu: str, other: str, arch: str) -> str:
    """Why ``gpu`` runs ``other``'s table, for messages."""
    if SIBLING_GPUS.get(arch, {}).get(gpu) == other:
        return f"a part with the same SMs and memory as {gpu}"
    return f"the reference part of {arch}"


def gpu_dirname(name: str) -> str:
    """The table folder of a device name: aliases of one chip share one folder."""
    name = " ".join(name.split())
    for prefix, folder in GPU_ALIASES:
        if name == prefix or name.startswith(prefix + " "):
            return folder
    return re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z]", "_", name)).strip("_")


def bucket_for(num_tokens: int, buckets) -> int:
    """The nearest bucket not above ``num_tokens``, else the smallest; ``buckets`` sorted."""
    i = bisect.bisect_right(buckets, num_tokens)
    return buckets[i - 1] if i else buckets[0]


@dataclass(frozen=True)
class TunedEntry:
    config: Config
    bucket: int
    backend: str = "triton"
    time_us: float | None = None
    flashinfer_time_us: float | None = None
    trials: int = 0
    date: str = ""
    source: str = "tuned"
    triton_bench_us: float | None = None
    default_time_us: float | None = None  # the arch's default config, measured like time_us
    # the config the tables held for this bucket when the study began (the GPU's own, else its stand-ins'), and
    # its time in that study (None: not timed, e.g. outside the search space)
    incumbent: Config | None = None
    incumbent_time_us: float | None = None

    def get(self, name: str, default=None):
        """Dict-style access, for callers that treat an entry as its JSON object."""
        return getattr(self, name, default)

    def to_json(self) -> dict:
        return dict(config=self.config.to_dict(), time_us=self.time_us, triton_bench_us=self.triton_bench_us,
                    flashinfer_time_us=self.flashinfer_time_us, backend=self.backend,
                    trials=self.trials, date=self.date, source=self.source,
                    default_time_us=self.default_time_us,
                    **({} if self.incumbent is None else dict(incumbent=self.incumbent.to_dict(),
                                                              incumbent_time_us=self.incumbent_time_us)))


def software_provenance() -> dict:
    """What must match for a table to be trusted, plus what is recorded for people."""
    import torch
    import triton

    import sparsemla
    try:
        import flashinfer  # optional: recorded when present
        fi = flashinfer.__version__
    except Exception:
        fi = None
    return dict(torch=torch.__version__, cuda=torch.version.cuda, triton=triton.__version__,
                flashinfer=fi, sparsemla=sparsemla.__version__,
                template_hash=attention_template_hash())


def device_provenance(device=None) -> dict:
    import torch
    if device is None or not torch.cuda.is_available():
        return dict(gpu_name=None, compute_capability=None, driver=None)
    driver = None
    try:
        import subprocess
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=10).stdout.split("\n")[0].strip() or None
    except Exception:
        pass
    cc = torch.cuda.get_device_capability(device)
    return dict(gpu_name=torch.cuda.get_device_name(device), compute_capability=f"{cc[0]}.{cc[1]}",
                driver=driver)


def _minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def _mismatch(prov: dict) -> str:
    """Why a table's configs may not mean what this code means by them ("" if they do)."""
    cur = software_provenance()
    if prov.get("template_hash") != cur["template_hash"]:
        return f"template hash {prov.get('template_hash')} != {cur['template_hash']}"
    if prov.get("sparsemla") != cur["sparsemla"]:
        return f"sparsemla {prov.get('sparsemla')} != {cur['sparsemla']}"
    return ""


def _other_triton(prov: dict) -> str:
    """How a table's Triton differs from this one's in major.minor ("" if it does not)."""
    cur = software_provenance()["triton"]
    if _minor(prov.get("triton", "")) != _minor(cur):
        return f"triton {prov.get('triton')} != {cur} (major.minor)"
    return ""


def checked_buckets(entries: dict, spec_of):
    """The shape every table format shares, checked: per key of ``entries`` (``spec_of(key)`` raises for a bad
    one), ``(key, spec, [(bucket, entry object, where), ...])``; ValueError names the first bad bucket or object."""
    for key, buckets in entries.items():
        spec = spec_of(key)
        if not isinstance(buckets, dict):
            raise ValueError(f"entries[{key!r}] must be an object")
        checked = []
        for b, e in buckets.items():
            where = f"entries[{key!r}][{b!r}]"
            if not str(b).isdigit() or int(b) < 1:
                raise ValueError(f"{where}: bucket must be a positive int")
            if not isinstance(e, dict):
                raise ValueError(f"{where} must be an object")
            checked.append((int(b), e, where))
        yield key, spec, checked


def parse_table(data) -> dict[str, dict[int, TunedEntry]]:
    """Validate a loaded JSON table; ValueError says the first thing that is wrong."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("version") != VERSION:
        raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
    for k in ("gpu", "family", "provenance", "entries"):
        if k not in data:
            raise ValueError(f"missing field {k!r}")
    if not isinstance(data["provenance"], dict) or not isinstance(data["entries"], dict):
        raise ValueError("provenance and entries must be objects")
    out = {}
    for key, spec, buckets in checked_buckets(data["entries"], KernelSpec.from_key):
        out[key] = {}
        for b, e, where in buckets:
            missing = {"config", "backend", "source"} - set(e)
            if missing:
                raise ValueError(f"{where}: missing fields {sorted(missing)}")
            if e["backend"] not in BACKENDS or e["source"] not in SOURCES:
                raise ValueError(f"{where}: backend {e['backend']!r} / source {e['source']!r}")
            try:
                cfg = Config.from_dict(e["config"]).check(spec)
                incumbent = Config.from_dict(e["incumbent"]) if e.get("incumbent") else None
            except (TypeError, ValueError) as err:
                raise ValueError(f"{where}: {err}") from None
            out[key][b] = TunedEntry(cfg, b, e["backend"], e.get("time_us"),
                                          e.get("flashinfer_time_us"), int(e.get("trials") or 0),
                                          str(e.get("date", "")), e["source"], e.get("triton_bench_us"),
                                          e.get("default_time_us"), incumbent, e.get("incumbent_time_us"))
    return out


_reported: set = set()


def _report_once(path, message: str) -> None:
    if str(path) not in _reported:
        _reported.add(str(path))
        log.warning("sparsemla: %s", message)


def read_table(path, check_provenance: bool = True) -> tuple[dict[str, dict[int, TunedEntry]], bool]:
    """(entries of one file, whether they were timed with this Triton); ({}, True) if the file is unusable
    (reported once). With ``check_provenance`` a table of another Triton major.minor is reported once too (its
    configs run, but were timed with another compiler). Never raises."""
    other = ""
    try:
        data = json.loads(Path(path).read_text())
        entries = parse_table(data)
        why = _mismatch(data["provenance"]) if check_provenance else ""
        other = _other_triton(data["provenance"]) if check_provenance else ""
    except FileNotFoundError:
        return {}, True
    except Exception as e:  # unreadable or malformed: the caller falls back to defaults
        why = f"{type(e).__name__}: {e}"
    if why:
        _report_once(path, f"ignoring tuned table {path}: {why}")
        return {}, True
    if other:
        _report_once(path, f"tuned table {path} was made with another Triton ({other}): its configs are used "
                           "where no table of this Triton has the entry (timed and GPU-checked with that Triton; "
                           "SPARSEMLA_OTHER_TRITON_TABLES=0 leaves them out); `sparsemla tune` tunes for this one")
    return entries, not other


def load_table(path, check_provenance: bool = True) -> dict[str, dict[int, TunedEntry]]:
    """Entries of one file, or {} (reported once) if it is unusable or, with ``check_provenance``, timed with
    another Triton major.minor (``load_tables`` still uses those); never raises."""
    entries, this_triton = read_table(path, check_provenance)
    return entries if this_triton else {}


def user_dir() -> Path:
    root = os.environ.get("SPARSEMLA_TUNED_DIR")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "sparsemla" / "tuned"


def package_dir() -> Path:
    return Path(str(resources.files("sparsemla.tuned")))


def table_paths(gpu: str, family: str = "sparse_mla") -> list[Path]:
    """Files read for ``gpu`` (a folder name), lowest precedence first."""
    return [d / gpu / f"{family}.json" for d in (package_dir(), user_dir())]


def load_tables(gpu: str, family: str = "sparse_mla",
                check_provenance: bool = True) -> dict[str, dict[int, TunedEntry]]:
    """The entries of ``gpu``'s tables, per bucket the user's over the package's, and those timed with this
    Triton over those of another Triton major.minor (whose configs still run: ``read_table``; their Gluon
    kernels were GPU-checked with the table's Triton only; ``SPARSEMLA_OTHER_TRITON_TABLES=0`` leaves them out);
    ``check_provenance`` False also takes tables made for other code (the tuner's seeds: each is re-measured)."""
    this_triton: dict[str, dict[int, TunedEntry]] = {}
    merged: dict[str, dict[int, TunedEntry]] = {}
    other_triton = os.environ.get("SPARSEMLA_OTHER_TRITON_TABLES", "1") != "0"
    for path in table_paths(gpu, family):
        entries, same = read_table(path, check_provenance)
        if not (same or other_triton):
            continue
        for key, buckets in entries.items():
            (this_triton if same else merged).setdefault(key, {}).update(buckets)
    for key, buckets in this_triton.items():
        merged.setdefault(key, {}).update(buckets)
    return merged


def write_table(path, gpu: str, entries: dict[str, dict[int, TunedEntry]], provenance: dict,
                family: str = "sparse_mla") -> Path:
    """Merge ``entries`` into the table at ``path`` (atomic). Entries of a file made by other
    software are dropped, not mixed with new ones."""
    path = Path(path)
    old = load_table(path) if path.exists() else {}
    for key, buckets in entries.items():
        old.setdefault(key, {}).update(buckets)
    data = dict(version=VERSION, gpu=gpu, family=family, provenance=provenance,
                entries={k: {str(b): e.to_json() for b, e in sorted(bs.items())}
                         for k, bs in sorted(old.items())})
    atomic_write(path, json.dumps(data, indent=1) + "\n")
    return path


def today() -> str:
    return datetime.date.today().isoformat()
