"""The lm-eval reader on files lm-eval wrote (data/item_bank_sample, written by lm-eval's own evaluator and
EvaluationTracker; see tests/interop/test_real_tools.py), and its errors on damaged copies of them."""
import json
import shutil

import numpy as np
import pytest
from paths import REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.interop import import_run
from mcqa_toolkit.interop.lm_eval import read_lm_eval
from mcqa_toolkit.items import DatasetError

SIM = REPO / "data" / "item_bank_sample" / "lm-eval" / "sim-00"


def test_reads_lm_evals_own_files_and_its_verdicts():
    source, responses = read_lm_eval(SIM)
    assert source.tool == "lm-eval" and source.version == "0.4.13" and source.model == "sim-00"
    assert source.task == "mcqa_sim" and source.method == "loglik" and len(responses) == 66
    samples = [json.loads(line) for line in next(SIM.glob("samples_*.jsonl")).open()]
    for resp, s in zip(responses, samples, strict=True):
        assert resp.choice == int(np.argmax([float(r[0]) for r in s["filtered_resps"]]))
        assert float(resp.choice == resp.question.answer) == s["acc"]


def test_char_normalization_is_acc_norm():
    _, raw = read_lm_eval(SIM)
    _, norm = read_lm_eval(SIM, normalization="char")
    for r, n in zip(raw, norm, strict=True):
        lengths = np.array([len(o) for o in r.question.options], dtype=float)
        np.testing.assert_allclose(n.scores, np.asarray(r.scores) / lengths, rtol=1e-12)
    with pytest.raises(ValueError, match="normalization 'token'"):
        read_lm_eval(SIM, normalization="token")


def test_generative_samples_read_the_filtered_answer(tmp_path):
    """A copy turned into generate_until samples: `resps` the generation, `filtered_resps` the extracted letter."""
    out = tmp_path / "gen"
    shutil.copytree(SIM, out)
    samples = next(out.glob("samples_*.jsonl"))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    for s in lines:
        letter = "ABCDE"[int(s["target"])] if s["doc_id"] % 2 else "Z"
        s.update(resps=[[f"ANSWER: {letter}"]], filtered_resps=[letter], filter="strict-match")
    samples.write_text("".join(json.dumps(s) + "\n" for s in lines))
    results = next(out.glob("results_*.json"))
    r = json.loads(results.read_text())
    r["configs"]["mcqa_sim"]["output_type"] = "generate_until"
    results.write_text(json.dumps(r))
    res = import_run("lm-eval", out, tmp_path / "run", items=load("demo", language="pt"), dataset="demo")
    assert res.records["method"].eq("generate").all() and res.unmatched.empty
    odd = res.records[[json.loads(e)["lm_eval"]["doc_id"] % 2 == 1 for e in res.records["extra"]]]
    assert odd["correct"].all() and len(odd) == 33
    even = res.records.drop(odd.index)
    assert even["status"].eq("unanswered").all()                      # "Z" names no option
    assert set(res.records["extraction_rule"]) == {"lm-eval filter strict-match"}


def test_damaged_files_fail_naming_file_line_and_field(tmp_path):
    out = tmp_path / "bad"
    shutil.copytree(SIM, out)
    samples = next(out.glob("samples_*.jsonl"))
    lines = samples.read_text().splitlines()
    third = json.loads(lines[2])
    third["filtered_resps"][1][0] = "NA"
    samples.write_text("\n".join(lines[:2] + [json.dumps(third)] + lines[3:]) + "\n")
    with pytest.raises(DatasetError,
                       match=r"samples_mcqa_sim_.*\.jsonl: record 3: field 'filtered_resps': 'NA' is not a number"):
        read_lm_eval(out)
    samples.write_text("\n".join(lines[:4] + ["{not json"]) + "\n")
    with pytest.raises(DatasetError, match="record 5: not JSON"):
        read_lm_eval(out)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no lm-eval samples"):
        read_lm_eval(tmp_path / "empty")
