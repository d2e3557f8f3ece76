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

from pathlib import Path
from typing import Any

from mcqa_toolkit.backends.batch.base import Requests, Results
from mcqa_toolkit.backends.batch.openai import OpenAIFormat, read_openai_lines

__all__ = ["VLLMRunBatch", "INPUT", "OUTPUT"]

INPUT = "vllm_batch_input.jsonl"
OUTPUT = "vllm_batch_output.jsonl"


class VLLMRunBatch(OpenAIFormat):
    """The `vllm run-batch` files of one run folder, behind the batch clients' interface: submitting writes the
    input file (one part: no documented limit), and the batch has ended once the output file is there."""

    api = "vllm_run_batch"
    stem = INPUT.removesuffix(".jsonl")

    def __init__(self, backend: Any):
        super().__init__(backend)
        self.limits = None
        self.model = backend.model

    def command(self, folder: Path) -> str:
        return (f"python -m vllm.entrypoints.openai.run_batch -i {folder / INPUT} -o {folder / OUTPUT} "
                f"--model <the model folder> --served-model-name {self.model}")

    def check(self, requests: Requests) -> None:
        """Refuse a run that needs other requests than chat completions, in one sentence."""
        other = sorted({endpoint for endpoint, _ in requests.values()} - {"chat"})
        if other:
            n = sum(endpoint != "chat" for endpoint, _ in requests.values())
            raise ValueError(f"`vllm run-batch` reads chat-completions lines only, and this run needs {n} {other} "
                             "requests (letters, option log-likelihoods, cloze or Min-K%): run them against a vLLM "
                             "server (backend: openai, provider: vllm) or in-process (backend: vllm)")

    def create(self, name: str, lines: list[str], data: bytes, folder: Path) -> dict[str, Any]:
        """Nothing is sent: the entry waits for `vllm run-batch`'s output, and says how to make it."""
        return {"api": self.api, "id": "vllm-run-batch", "input_file": name, "output_file": OUTPUT,
                "folder": str(folder), "n_requests": len(lines), "status": "written",
                "reason": f"waiting for its output: run `{self.command(folder)}`"}

    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Ended once `vllm run-batch`'s output file is in the run folder."""
        done = (Path(entry["folder"]) / entry["output_file"]).exists()
        return {**entry, "status": "completed" if done else "written", "ended": done,
                "reason": "" if done else entry.get("reason", "")}

    def results(self, entry: dict[str, Any]) -> Results:
        text = (Path(entry["folder"]) / entry["output_file"]).read_text(encoding="utf-8")
        return read_openai_lines(text.splitlines())
