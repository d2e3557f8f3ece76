"""The local transformers backend: model loading with the GGUF cache (loading), tokenisation conventions
(tokens), the KV-prefix scoring engine (engine), generation (generation) and HFBackend (backend).
torch and transformers are imported only under this package."""
from mcqa_toolkit.backends.hf.backend import HFBackend, load
from mcqa_toolkit.backends.hf.loading import DEFAULT_MODEL, LM, load_model, wrap

__all__ = ["HFBackend", "load", "DEFAULT_MODEL", "LM", "load_model", "wrap"]
