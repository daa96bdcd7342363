"""runtime/launch.py: the key of a direct launch is what Triton specializes on, and a launch goes
through the JIT once per key, then through the compiled launcher with the JIT's argument order.
(On the CPU the launcher is a stand-in; the GPU benchmark runs the real one.)"""
import pytest
import torch

from sparsemla.runtime import launch as fast


def test_arg_key_tells_apart_what_triton_specializes_on():
    key = fast.arg_key
    assert key(32) == key(48) != key(33)  # divisibility by 16
    assert key(1) != key(17) and key(2) == key(3)  # == 1
    assert key((1 << 31) - 16) != key(1 << 31)  # i32 or i64
    assert key(True) != key(False) and key(True) != key(1)
    assert key(0.5) == key(2.0) and key(None) is None
    a = torch.zeros(64, dtype=torch.int32)
    assert key(a) == key(torch.ones(64, dtype=torch.int32)) != key(a.float())  # dtype
    assert key(a[1:]) != key(a) == key(a[4:]) and key(a[1:]) == key(a[5:])  # 16-byte alignment (4 B elements)


class _Compiled:
    function, packed_metadata = "function", "metadata"

    def __init__(self):
        self.runs = []

    def run(self, *a):
        self.runs.append(a)


class _Jit:
    """A stand-in for a JIT function: records launches through the JIT."""

    def __init__(self):
        def kern(x, n, out, BLOCK, FLAG):  # the signature launch reads
            pass
        self.fn, self.__name__, self.launches, self.compiled = kern, "kern", [], _Compiled()

    def __getitem__(self, grid):
        def call(*args, **kw):
            self.launches.append((grid, args, kw))
            return self.compiled
        return call


@pytest.fixture
def direct(monkeypatch):
    monkeypatch.setattr(fast, "ENABLED", True)
    monkeypatch.setattr(fast, "_direct_ok", lambda args: True)
    monkeypatch.setattr(fast, "stream_handle", lambda device: "stream")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(fast, "_compiled", {})


def test_launch_goes_direct_after_the_first_launch_of_a_key(direct):
    jit, x, out = _Jit(), torch.zeros(8), torch.zeros(8)
    fast.launch(jit, (4,), x, 32, out, FLAG=True, BLOCK=8, num_warps=4)
    assert len(jit.launches) == 1 and not jit.compiled.runs
    fast.launch(jit, (5, 2), x, 48, out, FLAG=True, BLOCK=8, num_warps=4)  # same key: 48 % 16 == 0
    assert len(jit.launches) == 1
    # grid padded to 3, stream, function, metadata, no launch metadata or hooks, then the
    # arguments with the constexprs in parameter order (BLOCK before FLAG)
    assert jit.compiled.runs == [(5, 2, 1, "stream", "function", "metadata", None, None, None,
                                  x, 48, out, 8, True)]
    for n, kw in ((33, dict(BLOCK=8, FLAG=True, num_warps=4)),  # another divisibility
                  (32, dict(BLOCK=16, FLAG=True, num_warps=4)),  # another constexpr
                  (32, dict(BLOCK=8, FLAG=True, num_warps=8))):  # other options
        fast.launch(jit, (4,), x, n, out, **kw)
    assert len(jit.launches) == 4 and len(jit.compiled.runs) == 1
    fast.launch(jit, (4,), x, 33, out, BLOCK=8, FLAG=True, num_warps=4)
    assert len(jit.launches) == 4 and len(jit.compiled.runs) == 2


def test_launch_takes_the_jit_when_off_or_not_directly_callable(direct, monkeypatch):
    jit, x = _Jit(), torch.zeros(8)
    jit.compiled = object()  # no launcher to call (the interpreter's result)
    for _ in range(2):
        fast.launch(jit, (1,), x, 16, x, BLOCK=8, FLAG=False)
    assert len(jit.launches) == 2
    monkeypatch.setattr(fast, "ENABLED", False)
    jit = _Jit()
    for _ in range(2):
        fast.launch(jit, (1,), x, 16, x, BLOCK=8, FLAG=False)
    assert len(jit.launches) == 2 and not jit.compiled.runs
    with pytest.raises(TypeError, match=r"kern: positional arguments then \['BLOCK'\] do not cover"):
        fast.ordered_args(jit, (x, 16, x), dict(BLOCK=8))


def test_a_launch_hook_sends_launches_through_the_jit(monkeypatch):
    # A profiler's launch hook must see every launch, so a set hook turns the direct path off.
    from triton import knobs
    assert not fast._hooked()
    hook = lambda *a, **k: None  # noqa: E731
    chain = knobs.runtime.launch_enter_hook
    if hasattr(chain, "add"):  # a HookChain (newer Triton): hooked while it holds a call
        chain.add(hook)
        try:
            assert fast._hooked()
        finally:
            chain.remove(hook)
    else:
        monkeypatch.setattr(knobs.runtime, "launch_enter_hook", hook)
        assert fast._hooked()
        monkeypatch.undo()
    assert not fast._hooked()
