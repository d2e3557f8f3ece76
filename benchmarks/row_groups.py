"""What one call of the tree attention's row part costs beside its keys: backends/hf/tree_rows.LAUNCH_KEYS and
GROUP_KEYS.

tree_rows batches blocks of 64 queries into one attention call per group; a group pads its blocks to its longest
key list. Whether blocks should share a call is the call's fixed work (the gathers, the kernel's set-up, the copies
back: the same dozen kernels at any size) against the keys the shorter ones are padded with, and, on a CPU, whether
the group's keys still fit the core's cache. Measured here on the model's attention shape (Gemma-3-270M: 4 query
heads, 1 KV head, dim 256 by default) through `attend_rows` itself, `--blocks` blocks of `--keys` keys each cut
into groups of m blocks, interleaved, median of `--repeats`:
- by_group_size: the row part's time for each m (the fastest m bounds GROUP_KEYS: m x keys);
- fixed per call = (t(m=1) - t(m=2)) / (calls saved), both within the cache;
- per key = (t(m=2, keys + 128) - t(m=2, keys)) / (blocks x 128);
- launch keys = fixed / per key: the padded keys per block row one call is worth.

    python benchmarks/row_groups.py --json results/benchmarks/.../row_groups.json
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from mcqa_toolkit.backends.hf import tree, tree_rows
from mcqa_toolkit.backends.hf.tree_rows import RowGroup

try:  # run as a script or as a module
    from _results import write_json
except ModuleNotFoundError:
    from benchmarks._results import write_json


def _group(blocks: int, keys: int, size: int, width: int, device: str, dtype: torch.dtype, first: int = 0
           ) -> RowGroup:
    """A group of `blocks` blocks of `size` queries from block `first` on, each against `keys` keys of one row of
    `width` (random positions; every pair visible: the kernel's cost does not depend on what the mask hides)."""
    g = torch.Generator().manual_seed(first)
    queries = (first * size + torch.arange(blocks * size)) % width
    key_index = torch.randint(0, width, (blocks * keys,), generator=g)
    mask = torch.zeros(blocks, 1, size, keys, dtype=dtype)
    return RowGroup(size, blocks, keys, blocks * size, queries.to(device), key_index.to(device),
                    queries.to(device), {None: mask.to(device)}, False)


def _time(fn, repeats: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=13, help="blocks per row (an ENEM letters tree call: ~13)")
    ap.add_argument("--keys", type=int, default=192, help="keys per block (ancestors + the block's own)")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    dtype, size, n = getattr(torch, args.dtype), tree.QUERY_BLOCK, args.blocks
    width = n * size
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, args.heads, width, args.dim, generator=g).to(args.device, dtype)
    k, v = (torch.randn(1, args.kv_heads, width, args.dim, generator=g).to(args.device, dtype) for _ in range(2))
    scale = args.dim ** -0.5
    sizes = sorted({1, 2, 3, 4, 7, n} - {m for m in (3, 4, 7) if m >= n})

    def cut(m: int, keys: int) -> list[RowGroup]:
        return [_group(min(m, n - j), keys, size, width, args.device, dtype, j) for j in range(0, n, m)]
    plans = {**{str(m): cut(m, args.keys) for m in sizes}, "2, more keys": cut(2, args.keys + 128)}
    times: dict[str, list[float]] = {name: [] for name in plans}
    for _ in range(args.repeats):  # interleaved: drift and other load touch every variant alike
        for name, plan in plans.items():
            times[name] += _time(lambda p=plan: tree_rows.attend_rows(q, k, v, p, None, scale, tree.attend), 1)
    med = {name: statistics.median(t) for name, t in times.items()}
    fixed = (med["1"] - med["2"]) / (n - -(-n // 2))
    per_key = (med["2, more keys"] - med["2"]) / (n * 128)
    best = min(sizes, key=lambda m: med[str(m)])
    kind = torch.device(args.device).type
    result = {"args": {**vars(args), "json": "JSON"}, "by_group_size_ms": {m: med[str(m)] * 1e3 for m in sizes},
              "more_keys_ms": med["2, more keys"] * 1e3, "fastest_group_size": best,
              "fixed_us_per_call": fixed * 1e6, "us_per_key_per_block": per_key * 1e6,
              "launch_keys": fixed / per_key if per_key > 0 else None, "fastest_group_keys": best * args.keys,
              "used": {"launch_keys": tree_rows.LAUNCH_KEYS.get(kind), "group_keys": tree_rows.GROUP_KEYS.get(kind)}}
    print(f"{n} blocks x {args.keys} keys, {args.heads} heads / {args.kv_heads} KV, dim {args.dim}, {args.dtype} on "
          f"{args.device}, ms by blocks per call: " + ", ".join(f"{m}: {med[str(m)] * 1e3:.2f}" for m in sizes))
    print(f"fixed per call {fixed * 1e6:.0f} us, per key per block {per_key * 1e6:.2f} us: launch keys "
          f"{result['launch_keys'] or float('nan'):.0f}; fastest {best} blocks per call ({best * args.keys} keys); "
          f"tree_rows uses {result['used']}")
    write_json(args.json, result, args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
