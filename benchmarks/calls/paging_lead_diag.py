"""Issue 4 diagnostic (session 19): where does a touched page_split call with the lead share spend the
~8 us it takes beyond its TMA copy alone (76.5 us against 68.2 on 834 scattered pages)?

Times, in a CUDA graph of back-to-back calls on the benchmark's scattered pool (524K ids over 834 of
13354 pages), the default path cut short at each step, each variant ending with the final compact so
every mark is 0 again:
  A  lead mark + lead compact (+ final compact)
  B  A, then the lead's TMA copy on the side stream, joined
  C  B with the rest of the ids marked on the main stream beside the copy
  D  C with the rest's list copy: the whole default path
  E  the TMA copy alone on the lead's list (what the copy costs with nothing beside it)
  F  B with the lead's copy on the main stream (no fork or join)
Run on the GPU after `pip install .`: python3 benchmarks/calls/paging_lead_diag.py
"""
import os
import sys

import torch

import sparsemla
from sparsemla.gen.paging import PageSplitSpec
from sparsemla.gen.render import load_module
from sparsemla.runtime import paging

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_paging import _median_us, capture, split_pools, touched_tokens  # noqa: E402

DEV = torch.device("cuda")
P, D = 256, 64


def main():
    gen = torch.Generator(device=DEV).manual_seed(0)
    n, src, dst = split_pools(gen, 2.0, P, D)
    s64, d64 = src.view(torch.int64), dst.view(torch.int64)
    spec = PageSplitSpec(P, D, "sm90")
    mod = load_module(spec)
    cfg = spec.default_config(touched=True)
    ratio = P // D
    for pool, tok in (("834 scattered pages", touched_tokens(n, P, n // 16, (256, 2048), gen)),
                      ("4 pages", touched_tokens(n, P, 4, (256, 2048), gen))):
        tok = tok.reshape(-1)
        sparsemla.page_split(src, src_page_size=P, touched_indices=tok, out=dst)  # state, kernels built
        state = paging._page_list(DEV, n, cfg)
        lead = min(tok.numel(), -(-tok.numel() // (cfg.lead_split * 16)) * 16)
        lead_mark = paging._mark(mod, state, tok[:lead], n, cfg, state.lead_count, bool(cfg.mark_check))
        lead_compact = paging._compact(mod, state, n, cfg, state.lead_pages, state.lead_count, lead=True)
        paging._tma_compiled.discard((DEV, cfg))  # (built here eagerly; captures always take it)
        lead_copy = paging._copy(mod, state, s64, d64, n, ratio, cfg, state.lead_pages, state.lead_count)
        rest_mark = paging._mark(mod, state, tok[lead:], n, cfg, state.count, True)
        final_compact = paging._compact(mod, state, n, cfg, state.pages, state.count, lead=False)
        rest_copy = paging._copy(mod, state, s64, d64, n, ratio, cfg, state.pages, state.count, tma=False)
        main_stream = torch.cuda.current_stream()

        def forked(fn):
            state.side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(state.side):
                fn()

        def join():
            torch.cuda.current_stream().wait_stream(state.side)

        steps = {
            "A lead mark + compact": lambda: (lead_mark(), lead_compact(), final_compact()),
            "B A + lead copy (side stream)": lambda: (lead_mark(), lead_compact(), forked(lead_copy),
                                                      final_compact(), join()),
            "C B + rest mark": lambda: (lead_mark(), lead_compact(), forked(lead_copy), rest_mark(),
                                        final_compact(), join()),
            "D C + rest copy (the default path)": lambda: (lead_mark(), lead_compact(), forked(lead_copy),
                                                           rest_mark(), final_compact(), rest_copy(), join()),
            "F B on one stream": lambda: (lead_mark(), lead_compact(), lead_copy(), final_compact()),
            "whole page_split call": lambda: sparsemla.page_split(src, src_page_size=P, touched_indices=tok, out=dst),
        }
        print(f"== {pool}", flush=True)
        for name, fn in steps.items():
            us = _median_us(capture(fn, 10).replay, 10, 20)
            print(f"  {name:40s} {us:7.2f} us", flush=True)
        lead_mark(), lead_compact()
        us = _median_us(capture(lead_copy, 10).replay, 10, 20)
        final_compact()
        torch.cuda.synchronize()
        print(f"  {'E TMA copy alone (the lead list)':40s} {us:7.2f} us", flush=True)
        assert int(state.marks.abs().sum()) == 0, "marks left set"
        del main_stream


if __name__ == "__main__":
    main()
