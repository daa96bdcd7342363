"""Render a template for a spec into an importable module, cached on disk by content hash.

The cache key hashes the rendered source itself (and the Triton version), so a changed
template, layout or renderer never reuses a stale module; rendering is cheap, importing and
compiling are not. Files are written to a
temporary name and renamed into place, so concurrent processes never import a half-written
module.
"""
from __future__ import annotations

import hashlib
import logging
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jinja2

from .layout import M1_SCALE_ROW_BYTES, FormatLayout
from .spec import KernelSpec, next_pow2

log = logging.getLogger("sparsemla")
_TL_DTYPES = {"bf16": "tl.bfloat16", "fp16": "tl.float16", "fp32": "tl.float32"}
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def interpreting() -> bool:
    """Whether Triton's interpreter is on in this process (TRITON_INTERPRET set, not 0)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _version() -> str:
    from sparsemla import __version__
    return __version__


def template_source(name: str) -> str:
    return resources.files("sparsemla.templates").joinpath(name).read_text()


def template_hash(name: str) -> str:
    return hashlib.sha256(template_source(name).encode()).hexdigest()[:16]


# Compile options every generated kernel gets, whatever Triton's defaults: FMA contraction, as every kernel was
# measured and tuned with (Triton up to 3.9 contracts by default and warns that 3.10 will not).
COMPILE_OPTIONS = {"enable_fp_fusion": True}
# The templates the attention configs of a tuned table run: the Triton kernel's, the Gluon ones' (the raw-row kernel's
# by the runtime's rule, runtime/triton_backend.raw_for).
ATTENTION_TEMPLATES = ("sparse_mla.py.jinja", "sparse_mla_gluon.py.jinja", "sparse_mla_gluon_raw.py.jinja")


def attention_template_hash() -> str:
    """What a tuned table's provenance records: a change to either template invalidates it."""
    return hashlib.sha256("\0".join(template_source(n) for n in ATTENTION_TEMPLATES).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """Where rendered modules go (``gen/``; the tuner's files sit beside it): SPARSEMLA_CACHE_DIR, else
    the user's cache folder, else (a read-only home, as in some serving containers) a temporary folder."""
    root = os.environ.get("SPARSEMLA_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "sparsemla")
    return _writable(root) / "gen"


@lru_cache(maxsize=None)
def _writable(root: str) -> Path:
    """``root`` if it can be created and written, else a per-user temporary folder (reported once)."""
    try:
        os.makedirs(root, exist_ok=True)
        if os.access(root, os.W_OK | os.X_OK):
            return Path(root)
        why = "not writable"
    except OSError as e:
        why = str(e)
    user = os.getuid() if hasattr(os, "getuid") else "user"
    fallback = Path(tempfile.gettempdir()) / f"sparsemla-{user}"
    log.warning("sparsemla: cache folder %s is unusable (%s); using %s (set SPARSEMLA_CACHE_DIR to choose one)",
                root, why, fallback)
    return fallback


@dataclass(frozen=True)
class CacheDesc:
    """One KV cache as the template sees it: naming prefix, layout, page size, list width."""

    name: str
    p: str  # argument prefix: "" for the main cache, "x_" for the extra one
    layout: FormatLayout
    page_size: int
    topk: int
    elem_bytes: int  # bytes of one element of the first view (its row offsets count these)

    @property
    def P(self) -> str:
        return self.p.upper()

    @property
    def views(self) -> tuple[str, ...]:
        return self.layout.views

    @property
    def row_bytes(self) -> int:
        return self.layout.row_bytes

    @property
    def scale_row_bytes(self) -> int:
        return M1_SCALE_ROW_BYTES

    @property
    def prefetch_bytes(self) -> int:
        """Bytes of a token's row that the kernel reads (its footer scale row aside)."""
        return self.row_bytes if self.layout.packed else self.layout.d_qk * self.elem_bytes

    @property
    def prefetch_lines(self) -> int:
        """Line offsets per row for the L2 prefetch: k * 128 B, the last clamped to the row's
        last byte, so a row is covered wherever it starts (cdiv(bytes, 128) + 1, a power of two)."""
        return next_pow2(-(-self.prefetch_bytes // 128) + 1)


def cache_descs(spec: KernelSpec) -> list[CacheDesc]:
    # An auto cache holds q's dtype; the other formats' first view is bytes.
    elem_bytes = _DTYPE_BYTES[spec.q_dtype] if spec.kv_format == "auto" else 1
    out = [CacheDesc("main", "", spec.layout, spec.page_size, spec.topk, elem_bytes)]
    if spec.extra_topk:
        out.append(CacheDesc("extra", "x_", spec.layout, spec.extra_page_size, spec.extra_topk, elem_bytes))
    return out


def _env() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=False, lstrip_blocks=False)


def attention_context(spec: KernelSpec) -> dict:
    """Template variables of sparse_mla.py.jinja for ``spec``."""
    layout = spec.layout
    q_segs = []
    for seg in layout.segments:
        if (seg.col, seg.width) not in q_segs:
            q_segs.append((seg.col, seg.width))
    return dict(caches=cache_descs(spec), q_segs=q_segs,
                v_segs=[s for s in layout.segments if s.in_v],
                cdt=_TL_DTYPES[spec.compute_dtype], cdt_bytes=_DTYPE_BYTES[spec.compute_dtype],
                interpret=interpreting())


def render_source(spec) -> str:
    """The module source for ``spec``: any frozen spec with ``key``, ``module_name``,
    ``template`` (a file in templates/) and ``template_context()``."""
    ctx = dict(spec.template_context(), spec=spec, spec_key=spec.key, version=_version())
    try:
        return _env().from_string(template_source(spec.template)).render(**ctx)
    except jinja2.TemplateError as e:
        raise RuntimeError(f"rendering {spec.template} for {spec.key} failed: {e}") from e


@lru_cache(maxsize=None)
def _rendered(spec) -> tuple[str, str]:
    """(source, content hash) of ``spec``'s module."""
    import triton
    src = render_source(spec)
    return src, hashlib.sha256(f"{src}\0{triton.__version__}".encode()).hexdigest()[:20]


def atomic_write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def module_path(spec) -> Path:
    return cache_dir() / _rendered(spec)[1] / f"{spec.module_name}.py"


def _import(spec, path: Path, suffix: str = ""):
    name = f"{spec.module_name}_{path.parent.name}{suffix}"
    mod_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[name] = module  # Triton's JIT reads the kernels' source through the module
    try:
        mod_spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    if getattr(module, "SPEC_KEY", None) != spec.key:
        del sys.modules[name]
        raise ImportError(f"it holds spec {getattr(module, 'SPEC_KEY', None)!r}")
    return module


@lru_cache(maxsize=None)
def load_module(spec):
    """Render (if not cached) and import the module for ``spec``; one import per process.

    A cached file that is not the rendering, fails to import or holds another spec is reported,
    rendered again and replaced, never trusted.
    """
    if interpreting():
        from . import interpreter_compat
        interpreter_compat.patch()
    src, path = _rendered(spec)[0], module_path(spec)  # (_rendered is cached: one rendering)
    if path.exists():
        try:  # the rendering is at hand: a file that is not exactly it (cut short, edited) is not trusted
            if path.read_text() == src:
                return _import(spec, path)
            problem = "its text is not the rendering"
        except Exception as e:
            problem = e
        log.warning("sparsemla: cached module %s for %s is unusable (%s); rendering it again",
                    path, spec.key, problem)
    atomic_write(path, src)
    try:
        return _import(spec, path)
    except Exception as e:
        raise RuntimeError(f"generated module for {spec.key} at {path} failed to import: {e}") from e


@lru_cache(maxsize=None)
def load_compilable_module(spec):
    """The module for ``spec`` imported with Triton's interpreter off, so its kernels can be
    compiled for a GPU target even in a process that runs the interpreter."""
    load_module(spec)  # renders (or repairs) the cached file
    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "0"
    try:
        return _import(spec, module_path(spec), suffix="_compiled")
    finally:
        if saved is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = saved
