"""Secrets never reach a file: a canary API key in the environment and a base URL carrying credentials go through
`mcqa run` (papermill notebooks in one kernel, the request cache, provenance) and `mcqa report --html` (its
tables notebook and the results page), and neither appears in any file they wrote. The server is
the OpenAI-compatible stand-in on 127.0.0.1 (tests/fake_api.py), which also checks that the credentials still
reach it (HTTP basic auth, from the URL the backend rebuilds in the kernel)."""
from __future__ import annotations

import base64
import os

import pytest
import yaml
from fake_api import FakeAPI
from fake_openai import provider_route

from mcqa_toolkit import cli
from mcqa_toolkit.backends.secrets import auth_env_name, strip_credentials, with_credentials
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run import grid

CANARY_KEY = "sk-CANARY-KEY-7f3a9c1e"
PASSWORD = "CANARY-PASSWORD-b7e41d"


def test_credentials_move_to_the_environment_and_back(monkeypatch):
    url = f"https://reader:{PASSWORD}@gpu1.example.org:8443/v1"
    entry = strip_credentials({"model": "m", "base_url": [url, "http://gpu2:8000/v1"]})
    assert entry["base_url"] == ["https://gpu1.example.org:8443/v1", "http://gpu2:8000/v1"]
    name = auth_env_name(entry["base_url"][0])
    monkeypatch.setenv(name, os.environ.pop(name))  # undone after the test
    assert os.environ[name] == f"reader:{PASSWORD}" and with_credentials(entry["base_url"][0]) == url
    assert with_credentials("http://gpu2:8000/v1") == "http://gpu2:8000/v1"


@pytest.mark.notebooks
def test_no_secret_in_any_file_a_run_and_its_report_write(tmp_path, monkeypatch):
    monkeypatch.setenv("CANARY_API_KEY", CANARY_KEY)
    monkeypatch.chdir(tmp_path)
    basic = "Basic " + base64.b64encode(f"reader:{PASSWORD}".encode()).decode()
    with FakeAPI() as api:
        for path in ("/v1/completions", "/v1/chat/completions"):
            api.route("POST", path, provider_route("vllm"))
        host = api.url.split("://")[1]
        model = {"backend": "openai", "model": "fake-model", "name": "canary", "api_key_env": "CANARY_API_KEY",
                 "base_url": f"http://reader:{PASSWORD}@{host}/v1", "cache_dir": str(tmp_path / "cache")}
        held = auth_env_name(f"http://{host}/v1")  # where the run moves the credentials for this process:
        monkeypatch.setenv(held, "")               # unset again after the test (setenv records its absence)
        monkeypatch.delenv(held)
        params = tmp_path / "p.yaml"
        params.write_text(yaml.safe_dump({"output_dir": "out", "models": [model], "datasets": ["demo"],
                                          "languages": ["pt"], "strategies": ["enem_0shot", "S1"], "shuffles": 1,
                                          "limit": 3}))
        before = {p for p in tmp_path.rglob("*")}
        assert grid.run_params(params, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
        assert api.requests and all(r.headers.get("authorization") == basic for r in api.requests)
    # the report's tables notebook reads every run's provenance and summary (the files that name the server); the
    # other analysis notebooks read records only, and cost a minute of CI
    monkeypatch.setattr(cli, "REPORT_NOTEBOOKS", ("10_tables.ipynb",))
    assert cli.report(tmp_path / "out", tmp_path / "figures", tmp_path / "latex", html=tmp_path / "out" /
                      "report.html") == 0
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p not in before]
    assert {"run_model.ipynb", "provenance.json", "records.parquet", "report.html", "10_tables.ipynb"} <= {
        p.name for p in written} and any(p.suffix == ".json" and "cache" in p.parts for p in written)
    leaks = [str(p) for p in written for secret in (CANARY_KEY, PASSWORD, "reader:")
             if secret.encode() in p.read_bytes()]
    assert not leaks, leaks
