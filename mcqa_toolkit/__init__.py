"""mcqa_toolkit: evaluate language models on human multiple-choice exams, measured like a psychometrician.

Importing the package is cheap: torch/transformers load only inside `models/` and `scoring/`.
"""
from mcqa_toolkit.items import DatasetError, Item, ItemSet

__version__ = "0.1.0"
__all__ = ["Item", "ItemSet", "DatasetError", "__version__"]
