"""The engine's support sweep (tests/support_sweep.py) over every causal-LM family of the installed transformers: each
family that transformers can build and run small is scored exactly as a user gets it (the self-check on), on every
engine path, and generates the plain forward's tokens; its status is the committed raw file's
(results/tests/support_sweep.json, which docs/support.md renders), so a change of support is seen and the table
rendered again (`python scripts/support_table.py`). The table describes one transformers release: under another (a
release that adds or rewrites families, which CI's fresh install picks up), every family is still held to the
guarantee (exact, or listed as unbuildable), and the comparison with the table is reported as not made
(`test_the_committed_table_describes_the_installed_transformers` skips, saying so). Under pytest-xdist its families
are cut into slices that workers take apart (the checkout's conftest.py, `SLICED`)."""
from __future__ import annotations

import functools
import json

import pytest
import support_sweep
from paths import REPO

from mcqa_toolkit.backends.hf import selfcheck

pytestmark = pytest.mark.slow
RAW = REPO / "results" / "tests" / "support_sweep.json"


def _families() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


@pytest.fixture
def fresh_verdicts(tmp_path, monkeypatch):
    """Each family checked afresh (verdicts kept apart from the user's cache), on support_sweep.THREADS torch
    threads, the process's count put back after."""
    import torch

    monkeypatch.setattr(selfcheck, "cache_dir", lambda: tmp_path / "selfcheck")
    monkeypatch.setattr(selfcheck, "_MEMO", {})
    threads = torch.get_num_threads()
    torch.set_num_threads(support_sweep.THREADS)
    yield
    torch.set_num_threads(threads)


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    """The committed raw file, read once per process (every family's test consults it)."""
    return json.loads(RAW.read_text()) if RAW.exists() else {"transformers": None, "rows": []}


def _same_release() -> bool:
    """Whether the committed table was measured with the installed transformers (its families and their code)."""
    import transformers

    return _table()["transformers"] == transformers.__version__


def _committed() -> dict[str, dict]:
    return {r["family"]: r for r in _table()["rows"]}


def test_the_committed_table_describes_the_installed_transformers():
    import transformers

    if not _same_release():
        pytest.skip(f"the committed table was measured with transformers {_table()['transformers']}, this is "
                    f"{transformers.__version__}: each family was held to exactness, not compared with the table "
                    "(run `python scripts/support_table.py`, then `python scripts/render_docs.py`)")
    assert sorted(_committed()) == _families()


@pytest.mark.parametrize("family", _families())
def test_every_family_is_scored_exactly_as_a_user_gets_it(family, tiny_tokenizer, fresh_verdicts):
    row = support_sweep.sweep(family, tiny_tokenizer)
    status = support_sweep.status(row)
    assert support_sweep.verdict(row) in ("exact", "unbuildable"), json.dumps(row, indent=1)
    if not _same_release():
        return  # another release: the guarantee above holds; the table test skips, saying so
    committed = _committed().get(family)
    assert committed is not None, f"{family} is not in the committed table: run `python scripts/support_table.py`"
    if support_sweep.near_the_bound(row) or support_sweep.near_the_bound(committed):
        return  # a path within a factor 4 of the bound may be kept or refused by another CPU's kernels
    assert support_sweep.status(committed) == status, (
        f"{family}: {status}, the committed table says {support_sweep.status(committed)}: run "
        "`python scripts/support_table.py` and commit results/tests/support_sweep.json and docs/support.md")
