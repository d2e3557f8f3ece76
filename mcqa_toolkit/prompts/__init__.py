"""Prompts: YAML templates per language and style, rendering Items into Prompts, few-shot selection.

    from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
    t = load_template("pt", "enem")
    p = render(item, t, shots=select_shots(pool, item, 1, "easiest"), permutation=(2, 0, 1, 3, 4))
    p.text, p.letter_continuations, p.continuations

No torch/transformers here: a Prompt is plain text; scorers tokenise it.
"""
from mcqa_toolkit.prompts.builder import Prompt, Shot, render
from mcqa_toolkit.prompts.shots import RULES, balanced_permutations, select_shots, split_shots
from mcqa_toolkit.prompts.template import TEMPLATE_DIR, Template, list_styles, load_template, template_languages

__all__ = [
    "Prompt", "Shot", "render",
    "RULES", "select_shots", "split_shots", "balanced_permutations",
    "Template", "load_template", "list_styles", "template_languages", "TEMPLATE_DIR",
]
