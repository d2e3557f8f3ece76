"""Batch mode for a vLLM deployment: no Batch API, but `vllm run-batch`, an offline job over a JSONL file.

`--batch-submit` writes the run's missing requests to the run folder as `vllm_batch_input.jsonl` (the OpenAI
batch line format: custom_id = request-cache key, method, url, body) and says which command to run on the GPU
node; `vllm run-batch` reads chat-completions lines only (vLLM 0.32: chat completions, embeddings, score, rerank,
audio), so a run that needs completions requests (first-token letters, option log-likelihoods, cloze, Min-K%) is
refused in one sentence: those need the server (`backend: openai`, `provider: vllm`) or vLLM in-process
(`backend: vllm`). When its output (`-o`) is in the run folder as `vllm_batch_output.jsonl`, `--batch-fetch`
stores the answers in the request cache and the run executes from it, like any batch.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcqa_toolkit.backends.batch import OPENAI_URLS, Results, read_openai_lines

INPUT = "vllm_batch_input.jsonl"
OUTPUT = "vllm_batch_output.jsonl"


class VLLMRunBatch:
    """The `vllm run-batch` files of one run folder, behind the interface of the batch APIs (submit, submitted,
    poll, results, cache_key)."""

    api = "vllm_run_batch"

    def __init__(self, backend: Any):
        self.model = backend.model
        self.cache_key = backend.sender.key

    def command(self, folder: Path) -> str:
        return (f"python -m vllm.entrypoints.openai.run_batch -i {folder / INPUT} -o {folder / OUTPUT} "
                f"--model <the model folder> --served-model-name {self.model}")

    def submit(self, requests: dict[str, tuple[str, dict[str, Any]]], folder: Path) -> list[dict[str, Any]]:
        other = sorted({endpoint for endpoint, _ in requests.values()} - {"chat"})
        if other:
            n = sum(endpoint != "chat" for endpoint, _ in requests.values())
            raise ValueError(f"`vllm run-batch` reads chat-completions lines only, and this run needs {n} {other} "
                             "requests (letters, option log-likelihoods, cloze or Min-K%): run them against a vLLM "
                             "server (backend: openai, provider: vllm) or in-process (backend: vllm)")
        lines = [json.dumps({"custom_id": key, "method": "POST", "url": OPENAI_URLS[endpoint], "body": body},
                            ensure_ascii=False, sort_keys=True) for key, (endpoint, body) in sorted(requests.items())]
        (folder / INPUT).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
        return [{"api": self.api, "id": "vllm-run-batch", "input_file": INPUT, "output_file": OUTPUT,
                 "folder": str(folder), "n_requests": len(lines), "status": "written",
                 "reason": f"waiting for its output: run `{self.command(folder)}`"}]

    def submitted(self, folder: Path, entry: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
        endpoints = {v: k for k, v in OPENAI_URLS.items()}
        rows = [json.loads(x) for x in (folder / entry["input_file"]).read_text(encoding="utf-8").splitlines() if x]
        return {r["custom_id"]: (endpoints[r["url"]], r["body"]) for r in rows}

    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Ended once `vllm run-batch`'s output file is in the run folder."""
        done = (Path(entry["folder"]) / entry["output_file"]).exists()
        return {**entry, "status": "completed" if done else "written", "ended": done,
                "reason": "" if done else entry.get("reason", "")}

    def results(self, entry: dict[str, Any]) -> Results:
        text = (Path(entry["folder"]) / entry["output_file"]).read_text(encoding="utf-8")
        return read_openai_lines(text.splitlines())
