"""The ENEM paper's protocol on whole real exams (../shared/reference/enem_exams: the development years' exams, as
published with the paper, with INEP's item files): every ENEM strategy plans and runs on each folder. The exams
meet the real files' quirks on the way: 2013's files are named after the adapted booklets 187-190 but follow
169/173/176/180, 2019 MT's named 522 follows 518/526 (a BookletMismatchWarning each); 2017's item file numbers
positions within each area; one 2013 CH question lost its text (left out with a warning); the foreign-language
questions of the Portuguese exams take the Portuguese exam's shots. Runs use the lookup-table backend (no model)
and one shuffle: what is tested is the planning and the prompts, not a model."""
import warnings

import pytest
from lookup_backend import LookupBackend
from paths import SHARED

from mcqa_toolkit.datasets import load
from mcqa_toolkit.enem.attach import BookletMismatchWarning
from mcqa_toolkit.run import run, strategy
from mcqa_toolkit.run.runner import plan_run

EXAMS, INEP = SHARED / "reference" / "enem_exams", SHARED / "reference" / "enem_inep"
FOLDERS = [(v, y) for v in ("pt-br", "en") for y in (2011, 2013, 2017, 2019, 2021)
           if any((EXAMS / v).glob(f"ENEM_{y}_*.csv"))] if EXAMS.is_dir() else []
ENEM = ("enem_0shot", "enem_1shot", "enem_4shot")


def _folder(tmp_path, version, year):
    d = tmp_path / f"{version}_{year}"
    d.mkdir()
    for f in (EXAMS / version).glob(f"ENEM_{year}_*.csv"):
        (d / f.name).symlink_to(f)
    return d


@pytest.mark.skipif(not FOLDERS, reason="../shared/reference/enem_exams is not beside this checkout")
@pytest.mark.parametrize("version,year", FOLDERS, ids=[f"{v}-{y}" for v, y in FOLDERS])
def test_every_enem_strategy_plans_and_runs_on_the_whole_exam(tmp_path, version, year):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        items = load("enem", path=_folder(tmp_path, version, year), item_params=INEP / f"ITENS_PROVA_{year}.csv")
    mismatched = [w for w in caught if issubclass(w.category, BookletMismatchWarning)]
    assert len(mismatched) == {2013: 4, 2019: 1}.get(year, 0)
    assert len(items) + len(items.skipped) == 185 and len(items.skipped) == (year == 2013 and version == "pt-br")
    exam_language = "pt" if version == "pt-br" else "en"
    assert {it.exam_language for it in items} == {exam_language}
    foreign = [it for it in items if it.meta.get("foreign_language")]
    assert len(foreign) == 10 and sum(it.irt is not None for it in items) >= 180
    backend = LookupBackend({it.item_id: [0.5 if k == (it.answer or 0) else 0.0 for k in range(5)] for it in items})
    for name in ENEM:
        st = strategy(name, shuffles=1)
        plan = plan_run(items, st)
        assert all(len(plan.shots[it.item_id]) == st.shots for it in plan.items)
        if st.shots:   # the foreign-language questions get the block of the other LC questions
            lc = {tuple(s.item_id for s, _ in plan.shots[it.item_id]) for it in plan.items
                  if it.meta.get("area") == "LC"}
            assert len(lc) == 1 and {items[i].exam_language for b in lc for i in b} == {exam_language}
        df = run(items, backend, st, tmp_path / f"{name}", progress=False)
        assert len(df) == len(plan.items) and set(df["language"]) == {exam_language}
        assert df.loc[df["answer"] >= 0, "correct"].all()      # the lookup table knows the key: planning is sound
