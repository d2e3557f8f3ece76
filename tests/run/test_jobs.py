"""run.jobs: a params file read and checked (one error naming the file and the key), expanded into Jobs (run folder
names, Min-K% measured once per model x dataset x language, credentials kept out), a Job's strategy built once, its
identity (what determines the records), and its notebook parameters (the one encoding of a run that crosses a process
boundary), as papermill writes them, back to the same Job and run identity."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mcqa_toolkit import cli
from mcqa_toolkit.datasets import load_items
from mcqa_toolkit.run import grid, jobs
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import prepare


def test_expand_and_validation(tmp_path):
    params = {"models": ["m"], "datasets": ["demo", {"name": "enem", "label": "e23", "args": {"path": "x"}}],
              "languages": ["pt"], "strategies": ["S1", {"base": "S4", "shuffles": 3}], "output_dir": "o"}
    js = jobs.expand(params, base_dir=tmp_path)
    assert [j.run_dir.name for j in js] == ["m__demo__pt__S1", "m__demo__pt__S4", "m__e23__pt__S1", "m__e23__pt__S4"]
    assert js[1].parameters()["STRATEGY"] == {"base": "S4", "shuffles": 3}
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [m]\ndatasets: [demo]\nstrategies: [S1]\nshufles: 3\n")
    with pytest.raises(ValueError, match="unknown key"):
        jobs.load_params(bad)
    with pytest.raises(ValueError, match="same run folder"):
        jobs.expand({**params, "datasets": ["demo", "demo"]})


def test_shipped_params_files_expand(tmp_path):
    """Every params file we ship is valid and expands; API model entries become backend options (no key in them)."""
    from mcqa_toolkit.resources import resource_dir

    files = sorted(resource_dir("params").glob("*.yaml"))
    assert len(files) >= 10
    for f in files:
        js = jobs.expand(jobs.load_params(f), base_dir=tmp_path)
        assert js, f.name
        for j in js:
            assert "api_key" not in j.backend_options and j.parameters()["BACKEND"] == j.backend_options
    vllm = jobs.expand(jobs.load_params(resource_dir("params") / "vllm.yaml"), base_dir=tmp_path)[0]
    assert vllm.backend_options["backend"] == "openai" and len(vllm.backend_options["base_url"]) == 2
    assert vllm.run_dir.name.startswith("gemma-3-27b-pt__enem2023__pt__")


def test_course_exam_params_expand_with_judges_and_every_question_type(tmp_path):
    from mcqa_toolkit.resources import params_file

    params = jobs.load_params(params_file("course_exam"))
    js = jobs.expand({**params, "datasets": [{"name": "course_exam", "args": {"path": "data/demo/course_exam"}}]},
                     base_dir=tmp_path)
    assert [j.run_dir.name for j in js] == ["gemma-3-270m__course_exam__en__course_generate",
                                            "gemma-3-270m__course_exam__en__course_json"]
    job = js[0]
    assert job.dataset_args["path"] == str(tmp_path / "data/demo/course_exam")  # relative to where mcqa run runs
    assert job.parameters()["JUDGES"] == ["gemma-3-270m"] and job.parameters()["JUDGE_COMBINE"] == "mean"
    items = load_items("course_exam", {}, "en")  # every question type is administered, none filtered out
    assert {it.answer_type for it in items} == {"single", "multi", "truefalse", "short"} and len(items) == 10
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [m]\ndatasets: [course_exam]\nstrategies: [S1]\njudge_combine: median\n")
    with pytest.raises(ValueError, match="judge_combine must be one of"):
        jobs.expand(jobs.load_params(bad))
    bad.write_text("models: [m]\ndatasets: [course_exam]\nstrategies: [S1]\njudges: gemma\n")
    with pytest.raises(ValueError, match="bad.yaml: 'judges' must be a list of judge models, got 'gemma'"):
        jobs.expand(jobs.load_params(bad))
    assert cli.main(["run", str(bad)]) == 2  # `mcqa: error: <file>: judges must be ...`


def test_load_params_errors_name_the_file_and_the_key(tmp_path):
    p = tmp_path / "p.yaml"
    grid_keys = "models: [m]\ndatasets: [demo]\nstrategies: [S1]\n"
    for text, message in (("- models\n- datasets\n", "expected a mapping of keys such as models"),
                          ("models: []\ndatasets: [demo]\nstrategies: [S1]\n", "'models' must be a non-empty list"),
                          ("models: [m]\ndatasets: [demo]\n", "'strategies' must be a non-empty list"),
                          (grid_keys + "output: o\n", "unknown key(s) ['output']; allowed: "),
                          (grid_keys + "seed: true\n", "'seed' must be an integer, got True"),
                          (grid_keys + "min_k: 'no'\n", "'min_k' must be true or false, got 'no'"),
                          ("models: [m]\ndatasets: [demo, {args: {path: x}}]\nstrategies: [S1]\n",
                           "datasets[2] needs a 'name' (text)")):
        p.write_text(text)
        with pytest.raises(ValueError) as refused:
            jobs.load_params(p)
        assert str(refused.value).startswith(f"{p}: ") and message in str(refused.value), str(refused.value)
    with pytest.raises(FileNotFoundError, match="params file not found: .*missing.yaml"):
        jobs.load_params(tmp_path / "missing.yaml")


def test_expand_names_run_folders_and_measures_min_k_once_per_model_dataset_language(tmp_path):
    params = {"models": ["org/model-a", {"model": "m-b", "name": "B", "backend": "openai", "base_url": "http://h/v1"}],
              "datasets": ["demo"], "languages": ["pt", "en"],
              "strategies": ["S1", {"base": "S5", "name": "S5 long"}, "S4"]}
    js = jobs.expand(params, base_dir=tmp_path)
    assert [j.run_dir.name for j in js[:3]] == ["org-model-a__demo__pt__S1", "org-model-a__demo__pt__S5-long",
                                                "org-model-a__demo__pt__S4"]
    assert js[0].run_dir.dir == tmp_path / "outputs" / "org-model-a__demo__pt__S1" and js[0].model == "org/model-a"
    assert [j.run_dir.name for j in js[6:9]] == ["B__demo__pt__S1", "B__demo__pt__S5-long", "B__demo__pt__S4"]
    assert js[6].model == "m-b" and js[6].backend_options["backend"] == "openai"
    # Min-K% depends on the model and the questions only: the first strategy of each model x dataset x language
    assert [j.min_k for j in js] == [True, False, False] * 4
    assert not any(j.min_k for j in jobs.expand({**params, "min_k": False}))
    (everything,) = jobs.expand({"models": ["m"], "datasets": ["demo"], "strategies": ["S1"]})
    assert everything.language is None and everything.run_dir.name == "m__demo__all__S1"
    with pytest.raises(ValueError, match="give a predefined name or a dict with 'name' or 'base'"):
        jobs.expand({**params, "strategies": [{"shuffles": 2}]})


def test_a_job_builds_its_strategy_once(monkeypatch):
    built = []
    real = jobs.build_strategy
    monkeypatch.setattr(jobs, "build_strategy", lambda *a, **kw: built.append(a) or real(*a, **kw))
    job = Job("m", "demo", {}, "pt", {"base": "enem_1shot", "name": "mine"}, Path("o"), shuffles=2, seed=3)
    st = job.build_strategy()
    assert (st.name, st.shots, st.shuffles, st.seed) == ("mine", 1, 2, 3)
    grid.estimated_cost(job)  # scheduling, the params check and the run share it
    assert job.build_strategy() is st and len(built) == 1
    other = dataclasses.replace(job, shuffles=4)  # another job: its own strategy
    assert other.build_strategy().shuffles == 4 and len(built) == 2


def test_identity_leaves_out_what_does_not_change_the_records_and_a_job_round_trips(tmp_path):
    """The identity (records.identity, from run.recipe.prepare) is the same wherever the run goes and runs (folder,
    device, dtype, Min-K%, the server's URL) and changes with what changes the records; a Job round-trips through
    its notebook parameters (UPPER_CASE, for papermill)."""
    job = Job("m", "demo", {}, "pt", "S1", tmp_path / "a", shuffles=2, backend_options={"base_url": "http://h"})
    same = dataclasses.replace(job, run_dir=tmp_path / "b", device="cuda", dtype="bfloat16", min_k=False,
                               backend_options={"base_url": "http://other"})
    identity = prepare(job).identity
    assert prepare(same).identity == identity and identity.model == "hf:m"
    for change in ({"shuffles": 3}, {"language": "en"}, {"limit": 5}, {"strategy": "S2"},
                   {"backend_options": {"backend": "openai"}}, {"judges": ["j"]}, {"dataset_args": {"per_subject": 1}}):
        assert prepare(dataclasses.replace(job, **change)).identity != identity, change
    params = job.parameters()
    assert params["RUN_DIR"] == str(tmp_path / "a") and params["BACKEND"] == {"base_url": "http://h"}
    assert Job.from_parameters({**params, "unrelated": 1}) == job  # e.g. the notebook's globals()


def test_a_job_round_trips_through_the_parameters_papermill_injects_to_the_same_run(tmp_path):
    """What `mcqa run` hands the kernel is the run notebook's parameters cell as papermill writes it: executed, it
    gives back the same Job (every field: nested strategy, judges, shot pool, loader arguments, None) and so the
    same run identity."""
    import nbformat
    from papermill.parameterize import parameterize_notebook

    from mcqa_toolkit.resources import notebooks_dir

    (job,) = jobs.expand({"models": [{"model": "m", "backend": "openai", "base_url": "http://127.0.0.1:1/v1"}],
                          "datasets": [{"name": "demo", "args": {"per_subject": 2},
                                        "shot_pool": {"name": "demo", "args": {"per_subject": 1}}}],
                          "languages": ["pt"], "strategies": [{"base": "S4", "shuffles": 3, "name": "mine"}],
                          "judges": ["j1", {"model": "j2", "backend": "openai"}], "judge_combine": "majority",
                          "limit": 4, "seed": 7, "min_k": False, "output_dir": str(tmp_path / "out")})
    nb = nbformat.read(notebooks_dir() / "run_model.ipynb", as_version=4)
    nb.metadata["papermill"] = {}   # what papermill.execute_notebook prepares before it parameterises
    nb = parameterize_notebook(nb, job.parameters())
    (injected,) = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    defaults = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    namespace: dict = {}
    exec(defaults.source + "\n" + injected.source, namespace)  # the two cells as the kernel runs them
    again = Job.from_parameters(namespace)
    assert again == job and again.run_dir.dir == tmp_path / "out" / job.run_dir.name
    assert prepare(again).identity == prepare(job).identity
    assert json.loads(json.dumps(job.parameters())) == job.parameters()   # plain JSON values, nothing else


NEW_EXAMS = [("oab", {"path": "oab"}),
             ("head_qa", {"path": ["head_qa/HEAD.json", "head_qa/HEAD_EN.json"]}),
             ("exams", {"path": "exams/dev.jsonl", "parallel": "exams/parallel_questions.jsonl"}),
             ("agieval", {"path": "agieval", "tasks": ["sat-math", "gaokao-physics", "jec-qa-kd"]})]


@pytest.mark.parametrize("name, args", NEW_EXAMS, ids=[n for n, _ in NEW_EXAMS])
def test_the_new_exams_params_files_dry_run_on_our_fixtures(tmp_path, capsys, name, args):
    """params/<exam>.yaml with its paths set (relative ones, lists included, from where `mcqa run` runs): every
    combination passes the preflight and `mcqa run --dry-run` lists it."""
    import yaml
    from paths import FIXTURES

    from mcqa_toolkit.resources import params_file

    params = jobs.load_params(params_file(name))
    params["datasets"][0]["args"] = args
    params["output_dir"] = str(tmp_path / "out")
    expanded = jobs.expand(params, base_dir=FIXTURES)
    path = expanded[0].dataset_args["path"]
    assert all(str(p).startswith(str(FIXTURES)) for p in (path if isinstance(path, list) else [path]))
    for key in ("path", "parallel"):
        if key in args:
            params["datasets"][0]["args"][key] = expanded[0].dataset_args[key]
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(params, allow_unicode=True))
    assert cli.main(["run", str(p), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(f"would run {j.run_dir.name}" in out for j in expanded) and "FAILED" not in out
    assert not (tmp_path / "out").exists()
