"""The `graphs` option's static shapes (backends/hf/static.py) on CPU: the same bucketed calls a CUDA device
captures as graphs run eagerly here, and must equal the naive computation (1e-4, fp32) with padded rows, width and
cached slots; buffers are reused across calls and blocks of the same buckets. Capture itself needs CUDA
(tests/backends/hf/test_gpu.py)."""
import numpy as np
from engine_requests import PREFIX, block_items

from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores
from mcqa_toolkit.backends.hf.static import round_up, row_bucket
from mcqa_toolkit.backends.hf.tokens import encode


def test_buckets():
    assert [row_bucket(n) for n in (1, 2, 3, 5, 9, 16, 17, 33)] == [1, 2, 4, 8, 16, 16, 32, 48]
    assert [round_up(n, 64) for n in (0, 1, 64, 65)] == [0, 64, 64, 128]


def test_static_calls_equal_naive_and_reuse_their_buffers(tiny_gemma):
    items = block_items(tiny_gemma)
    shared = encode(tiny_gemma, PREFIX)
    scorer = PrefixScorer(tiny_gemma, graphs=True, row_tokens=12)
    assert scorer.static is not None and not scorer.static.capture  # no CUDA here: static calls, eagerly
    first = scorer.score_block([(r, shared) for r in items[:2]])
    calls, buckets = len(scorer.static._calls), len(scorer.static._caches)
    second = scorer.score_block([(r, shared) for r in items[2:]] + [(items[0], ())])
    got = first + second
    want = [naive_scores(tiny_gemma, r) for r in items[:2] + items[2:] + [items[0]]]
    assert max(float(np.abs(a - b).max())
               for x, y in zip(got, want, strict=True) for a, b in zip(x, y, strict=True)) <= 1e-4
    dynamic = PrefixScorer(tiny_gemma, row_tokens=12)
    dynamic.score_block([(r, shared) for r in items[:2]])
    assert scorer.stats.padded > dynamic.stats.padded  # rows, width rounded up to their buckets
    assert len(scorer.static._caches) >= buckets and len(scorer.static._calls) >= calls >= 1
    n_calls, n_caches = len(scorer.static._calls), len(scorer.static._caches)
    again = scorer.score_block([(r, shared) for r in items[:2]])  # same buckets: no new buffer
    assert (len(scorer.static._calls), len(scorer.static._caches)) == (n_calls, n_caches)
    assert all(np.array_equal(a, b) for x, y in zip(first, again, strict=True) for a, b in zip(x, y, strict=True))
