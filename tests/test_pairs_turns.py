"""The pairs kernel's turn protocol (GluonKernel.pairs, turns), run on the CPU.

Its two computing groups take turns on the tensor cores through two mbarriers (templates/sparse_mla_gluon.py.jinja:
`_group_m`'s `mbarrier.wait(turn, ...)` and `mbarrier.arrive(turn_next)`). The GPU is the only place the kernel runs,
so these tests read those operations from the rendered `_group_m`, in the order the loops issue them, and play them
for two groups over every interleaving a random scheduler picks, with an mbarrier's phase rule (count 1: each arrive
completes a phase; a wait for parity p returns once the phase of that parity has completed, i.e. while the current
phase's parity is not p). Every unit count pair finishes (no group waits forever), and no two turns overlap.
"""
import functools
import random
import re

import pytest

from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.render import render_source
from sparsemla.gen.spec import KernelSpec


@functools.lru_cache(maxsize=None)
def _turn_ops(turns: str) -> tuple[list, list]:
    """The turn operations of `_group_m`'s tile loop and of its loop over the other unit's extra tiles, in order:
    ("wait", parity expression in j) or ("arrive", None)."""
    src = render_source(GluonKernel(KernelSpec(kv_format="fp8_e4m3", num_heads=16), 16, stages=1, pairs=2,
                                    turns=turns))
    body = src[src.index("def _group_m("):]
    body = body[:body.index("\n@gluon.jit") if "\n@gluon.jit" in body else len(body)]
    main = body[body.index("for j in range(n_tiles):"):]
    rest = main[main.index("for j in range(n_tiles, n_other):"):] if "range(n_tiles, n_other)" in main else ""
    main = main[:main.index("for j in range(n_tiles, n_other):")] if rest else main

    def ops(text):
        found = re.findall(r"mbarrier\.wait\(turn, ([^)]*)\)|mbarrier\.(arrive)\(turn_next\)", text)
        return [("wait", w) if w else ("arrive", None) for w, a in found]
    return ops(main), ops(rest)


def _mutant(turns: str) -> tuple[list, list]:
    """A broken protocol, to show the play catches one: every wait for parity 0."""
    return tuple([(op, "0" if op == "wait" else None) for op, _ in ops] for ops in _turn_ops(turns))


class _Barrier:
    def __init__(self):
        self.phase = 0

    def ready(self, parity: int) -> bool:
        return (self.phase & 1) != parity


def _play(turns: str, n: tuple[int, int], rng: random.Random, ops=_turn_ops) -> None:
    main, rest = ops(turns)
    bars = [_Barrier(), _Barrier()]
    bars[0].phase = 1  # the kernel's prologue arrives once on turn[0]: M0 goes first
    progs = []
    for me in (0, 1):
        seq = [(op, eval(p, {"j": j}) if p else None) for j in range(n[me]) for op, p in main]
        seq += [(op, eval(p, {"j": j}) if p else None) for j in range(n[me], n[1 - me]) for op, p in rest]
        progs.append(seq)
    pc, holding = [0, 0], [False, False]
    while pc[0] < len(progs[0]) or pc[1] < len(progs[1]):
        runnable = [me for me in (0, 1) if pc[me] < len(progs[me]) and
                    (progs[me][pc[me]][0] == "arrive" or bars[me].ready(progs[me][pc[me]][1]))]
        assert runnable, f"turns={turns} units' tiles {n}: both groups wait forever at {pc}"
        me = rng.choice(runnable)
        op, _ = progs[me][pc[me]]
        if op == "wait":
            holding[me] = True
            assert not holding[1 - me], f"turns={turns} units' tiles {n}: both groups hold a turn at {pc}"
        else:
            holding[me] = False
            bars[1 - me].phase += 1
        pc[me] += 1


@pytest.mark.parametrize("turns", ["both", "s"])
def test_the_two_groups_take_turns_and_finish(turns):
    main, rest = _turn_ops(turns)
    assert len(main) == (4 if turns == "both" else 2) and len(rest) == len(main)
    rng = random.Random(38)
    for n0 in range(4):
        for n1 in range(4):
            for _ in range(20):
                _play(turns, (n0, n1), rng)


def test_a_broken_protocol_is_caught():
    # turns at S^T only with every wait for parity 0: a group can take two turns in a row
    with pytest.raises(AssertionError, match="both groups"):
        rng = random.Random(38)
        for _ in range(200):
            _play("s", (3, 3), rng, _mutant)


def test_without_turns_the_groups_never_wait_for_each_other():
    assert _turn_ops("none") == ([], [])
