"""Launch a small generated kernel through its compiled launcher, without the JIT's binding.

Triton's ``kernel[grid](...)`` binds and specializes every argument on each call. For the page and
index kernels that is most of a call: 40-60 us of host time per launch on the H200 machine
(convert_indices: 2.6 us of GPU time, 40-60 us eager). ``launch`` keys each compiled kernel by what
that binding decides from the arguments -- each tensor's dtype and 16-byte alignment, each int's
width, divisibility by 16 and equality to 1, the other arguments' types -- with the constexprs,
options and current device; after a key's first launch through the JIT it calls the launcher
(``CompiledKernel.run``) directly, on torch's current stream (so a CUDA-graph capture records it).

On by default (``SPARSEMLA_FAST_LAUNCH=0`` turns it off). Measured on the H200 (session 11, the
paging benchmark run with and without it): the same graph times and correctness and graph checks,
and eager calls 24-59% shorter once the launch-hook check below stopped importing Triton's knobs on
every launch (touched page_split 206 -> 130 us, convert_indices 86 -> 39 us). Under the interpreter or with a launch hook set (profilers),
every launch goes through the JIT.
"""
from __future__ import annotations

import inspect
import logging
import os
import threading

import torch

from sparsemla.gen.render import COMPILE_OPTIONS

ENABLED = os.environ.get("SPARSEMLA_FAST_LAUNCH", "1") != "0"

_compiled: dict = {}  # launch key -> its CompiledKernel, or None (launched through the JIT only)
_MISSING = object()
_param_names: dict = {}  # JIT function -> its parameter names


def arg_key(a):
    """What Triton's specialization reads from one argument (its value only where it matters)."""
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.data_ptr() % 16 == 0)
    if isinstance(a, bool):
        return ("bool", a)
    if isinstance(a, int):
        return ("int", -(1 << 31) <= a < 1 << 31, a >= 1 << 63, a % 16 == 0, a == 1)
    if a is None or isinstance(a, (str, float)):
        return a if a is None else type(a).__name__
    return (type(a).__name__, a)  # anything else is keyed by value (a constexpr-like argument)


def ordered_args(jit_fn, args: tuple, constexprs: dict) -> list:
    """The launcher's argument list: ``args`` then the constexprs, in the kernel's parameter order."""
    names = _param_names.get(jit_fn)
    if names is None:
        names = _param_names[jit_fn] = list(inspect.signature(jit_fn.fn).parameters)
    rest = names[len(args):]
    if sorted(rest) != sorted(constexprs):
        raise TypeError(f"{jit_fn.__name__}: positional arguments then {sorted(constexprs)} do not "
                        f"cover its parameters {names}")
    return [*args, *(constexprs[n] for n in rest)]


def _direct_ok(args) -> bool:
    """CUDA tensors (not the interpreter's CPU ones) and no launch hook set."""
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    return first is not None and first.is_cuda and not _hooked()


_runtime_knobs = None  # triton.knobs.runtime, imported on the first direct launch


def _hooked() -> bool:
    """Whether a launch hook is set (a hook chain with hooks in it, or a plain callable). Two plain
    attribute reads: it runs on every launch."""
    global _runtime_knobs
    if _runtime_knobs is None:
        from triton import knobs
        _runtime_knobs = knobs.runtime
    enter, leave = _runtime_knobs.launch_enter_hook, _runtime_knobs.launch_exit_hook
    return ((enter is not None and bool(getattr(enter, "calls", True)))
            or (leave is not None and bool(getattr(leave, "calls", True))))


def capturing(device: torch.device) -> bool:
    """Whether a CUDA graph is being captured on ``device``'s current stream (never off CUDA)."""
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


_reported_captures: set = set()


def report_capture_buffers(what: str) -> None:
    """Say once per kind of buffer that a graph is being captured on a stream where no eager call made ``what``
    first, so each captured call allocates its own in the graph's pool (correct, but more nodes and memory)."""
    if what not in _reported_captures:
        _reported_captures.add(what)
        logging.getLogger("sparsemla").warning(
            "sparsemla: a CUDA graph is captured on a stream without %s of its own: each captured call gets "
            "one from the graph's memory pool. Make one eager call on the capture stream first to reuse one "
            "(reported once)", what)


def kept_buffer(shape, dtype: torch.dtype, device: torch.device, zero: bool = False) -> torch.Tensor:
    """A device buffer the runtime keeps across calls (a workspace, page_split's state), allocated outside any
    CUDA-graph memory pool. torch.compile's CUDA-graph trees (mode="reduce-overhead") route every allocation of
    the thread that warms up or records a graph into their pool, whatever the stream, and refuse a tensor there
    that outlives the call without being one of its outputs (H200, session 28, calls 1-2). So on CUDA it is
    allocated (and zeroed, and synchronized) on a thread of its own; it happens once per buffer, never during a
    capture (a captured call that lacks one gets its own from the graph's pool instead)."""
    if device.type != "cuda":
        buf = torch.empty(shape, dtype=dtype, device=device)
        return buf.zero_() if zero else buf
    made: dict = {}

    def make():
        try:
            with torch.cuda.device(device):
                buf = torch.empty(shape, dtype=dtype, device=device)
                if zero:
                    buf.zero_()
                torch.cuda.current_stream(device).synchronize()
            made["buf"] = buf
        except BaseException as e:  # raised in the caller's thread below
            made["error"] = e

    worker = threading.Thread(target=make, name="sparsemla-alloc")
    worker.start()
    worker.join()
    if "error" in made:
        raise made["error"]
    return made["buf"]


def stream_handle(device: int):
    """The handle of CUDA device ``device``'s current stream, as Triton's launchers take it."""
    from triton.runtime import driver
    return driver.active.get_current_stream(device)


def stream_key(device: torch.device) -> tuple:
    """(device, the handle of its current stream; 0 off CUDA): the key of a buffer kept per stream (calls on two
    streams may run at once, and a shared buffer would mix them)."""
    return device, stream_handle(device.index) if device.type == "cuda" else 0


def launch(jit_fn, grid, *args, num_warps: int = 4, **constexprs):
    """``jit_fn[grid](*args, **constexprs, num_warps=num_warps)``, through the compiled launcher
    once this key has been launched through the JIT (see the module docstring)."""
    if not ENABLED or not _direct_ok(args):
        return jit_fn[grid](*args, num_warps=num_warps, **COMPILE_OPTIONS, **constexprs)
    device = torch.cuda.current_device()
    key = (jit_fn, device, num_warps, tuple(sorted(constexprs.items())), tuple(arg_key(a) for a in args))
    known = _compiled.get(key, _MISSING)
    if known is not _MISSING and known is not None:
        g = tuple(grid) + (1,) * (3 - len(grid))
        known.run(g[0], g[1], g[2], stream_handle(device), known.function, known.packed_metadata,
                  None, None, None, *ordered_args(jit_fn, args, constexprs))
        return known
    compiled = jit_fn[grid](*args, num_warps=num_warps, **COMPILE_OPTIONS, **constexprs)
    if known is _MISSING:  # first launch of this key: keep the kernel if its launcher can be called directly
        # JITFunction.run (Triton 3.6 and 3.9) ends with the same call: grid x3, stream, function,
        # packed metadata, launch metadata and two hooks (None: no hook is set), every argument.
        ok = all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata"))
        _compiled[key] = compiled if ok else None
    return compiled
