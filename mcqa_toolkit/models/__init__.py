"""Model loading (transformers + torch). Import cost is paid only when models are used."""
from mcqa_toolkit.models.hf import DEFAULT_MODEL, LM, load_model, wrap

__all__ = ["DEFAULT_MODEL", "LM", "load_model", "wrap"]
