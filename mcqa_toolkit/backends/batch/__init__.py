"""Every provider's batch client, behind one interface (base.BatchClient: submit, poll, results, submitted,
cache_key), which run.batch (batch mode: `--batch-submit`, `--batch-fetch`) uses and nothing else:

- openai: the OpenAI Batch API, for OpenAI and the servers that offer it;
- anthropic: Anthropic Message Batches;
- gemini: Gemini Batch Mode;
- vllm: `vllm run-batch` files (vLLM has no Batch API; the run folder holds its input and output).

An API backend names its client by `api` (backends.api.ApiBackend.batch_client); the custom_id of every
request is its request-cache key (backends.cache.request_key), so fetching a batch only fills the request cache.
The SDKs are imported when a client is built, so importing this package is cheap.
"""
from __future__ import annotations

from mcqa_toolkit.backends.batch.anthropic import AnthropicBatches
from mcqa_toolkit.backends.batch.base import BatchClient, Requests, Results, split_lines
from mcqa_toolkit.backends.batch.gemini import GeminiBatches
from mcqa_toolkit.backends.batch.openai import OpenAIBatches, import_results, read_openai_lines
from mcqa_toolkit.backends.batch.vllm import VLLMRunBatch

# api (as recorded in the batch state) -> the client class
CLIENTS: dict[str, type[BatchClient]] = {c.api: c for c in (OpenAIBatches, AnthropicBatches, GeminiBatches,
                                                            VLLMRunBatch)}

__all__ = ["BatchClient", "Requests", "Results", "CLIENTS", "OpenAIBatches", "AnthropicBatches", "GeminiBatches",
           "VLLMRunBatch", "split_lines", "read_openai_lines", "import_results"]
