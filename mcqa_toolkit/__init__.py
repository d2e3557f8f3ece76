"""mcqa_toolkit: evaluate language models on human multiple-choice exams, measured like a psychometrician.

Importing the package is cheap: torch and transformers load only inside `backends/hf/` (and vLLM inside
`backends/vllm.py`), when a local model is asked for.
"""
from mcqa_toolkit.items import DatasetError, Item, ItemSet

__version__ = "0.1.0"
__all__ = ["Item", "ItemSet", "DatasetError", "__version__"]
