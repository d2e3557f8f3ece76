"""The masked-option probe detector (TS-Guessing, Deng et al. 2024): hide a wrong option and ask the model to write it.

A model that never saw a question can guess a distractor only from the stem and the other options; one that
read the question's page may write it word for word. Deng et al. ask an instruction model to fill a [MASK] in
the option list; a base model only continues text, so the probe here is the left-to-right form: the stem and the
options before the hidden one as "A) text" lines, then the hidden option's letter and ")", and the model writes
on greedily until a newline. The hidden option is the longest wrong one (the first of equals): the least
guessable. Per item: exact match (case, spacing and final punctuation ignored), ROUGE-L F1 over words (the
paper's second measure), and the mean log-prob per token of the hidden text after the same prompt (read, not
generated: a graded score every backend with log-probs can give: `probe_score`, the detector's item score).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.backends.base import Backend, Continuation
from mcqa_toolkit.items import LETTERS, Item, ItemSet
from mcqa_toolkit.prompts.builder import Prompt
from mcqa_toolkit.prompts.solved_page import has_page

__all__ = ["PROBE_COLUMNS", "hidden_option", "probe_prompt", "normalise", "rouge_l", "probe_table", "probe_score"]

PROBE_COLUMNS = ("model", "language", "item_id", "parallel_id", "hidden", "generated", "exact", "rouge_l",
                 "probe_logprob", "n_hidden_tokens")


def hidden_option(item: Item) -> int:
    """The option the probe hides: the longest wrong option (the first of equal length)."""
    wrong = [k for k in range(item.n_options) if k != item.answer]
    return max(wrong, key=lambda k: (len(item.options[k].strip()), -k))


def probe_prompt(item: Item, hidden: int) -> Prompt:
    """Stem, the options before `hidden` as 'A) text' lines, and the hidden option's letter with ')'."""
    lines = "".join(f"{LETTERS[k]}) {item.options[k].strip()}\n" for k in range(hidden))
    text = f"{item.stem.strip()}\n{lines}{LETTERS[hidden]})"
    return Prompt(item_id=item.item_id, shuffle=0, permutation=tuple(range(item.n_options)), letters=item.letters,
                  text=text, shared_prefix="", continuations=(), letter_continuations=(), neutral_context="")


def normalise(text: str) -> str:
    """Case-folded, spaces collapsed, final punctuation and spaces removed."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".;,:!?").strip().casefold()


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over whitespace words of the normalised texts: longest common subsequence (0 when either is
    empty)."""
    a, b = normalise(candidate).split(), normalise(reference).split()
    if not a or not b:
        return 0.0
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, start=1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    lcs = row[-1]
    if lcs == 0:
        return 0.0
    p, r = lcs / len(a), lcs / len(b)
    return 2 * p * r / (p + r)


def _rows(backend: Backend, chunk: Sequence[Item], max_new_tokens: int) -> list[dict]:
    hidden = [hidden_option(it) for it in chunk]
    prompts = [probe_prompt(it, h) for it, h in zip(chunk, hidden, strict=True)]
    truth = [it.options[h].strip() for it, h in zip(chunk, hidden, strict=True)]
    need = max(max_new_tokens, *(len(t) // 2 + 8 for t in truth))
    gens = backend.generate(prompts, max_new_tokens=need, temperature=0.0, stop=("\n",))
    reads = backend.loglikelihoods([Continuation(p, " " + t) for p, t in zip(prompts, truth, strict=True)])
    return [{"model": backend.name, "language": it.exam_language, "item_id": it.item_id,
             "parallel_id": it.parallel_id, "hidden": h, "generated": g.text.strip(),
             "exact": normalise(g.text) == normalise(t), "rouge_l": rouge_l(g.text, t),
             "probe_logprob": float(np.mean(r.logprobs)), "n_hidden_tokens": r.n_tokens}
            for it, h, t, g, r in zip(chunk, hidden, truth, gens, reads, strict=True)]


def probe_table(backend: Backend, items: ItemSet, block_size: int = 8, max_new_tokens: int = 16,
                progress: bool = False) -> pd.DataFrame:
    """One row per keyed single-answer item (PROBE_COLUMNS), `block_size` items per backend call; the model may
    write up to max(max_new_tokens, half the hidden option's characters + 8) tokens."""
    caps = backend.capabilities
    if not (caps.generate and caps.continuation_logprobs):
        raise ValueError(f"the masked-option probe needs generation and log-probs of given text; {backend.name} "
                         "lacks one")
    keyed = [it for it in items if has_page(it)]
    rows: list[dict] = []
    with tqdm(total=len(keyed), desc=f"probe {backend.name}", disable=not progress, unit="item") as bar:
        for lo in range(0, len(keyed), block_size):
            rows += _rows(backend, keyed[lo:lo + block_size], max_new_tokens)
            bar.update(len(keyed[lo:lo + block_size]))
    return pd.DataFrame(rows, columns=list(PROBE_COLUMNS))


def probe_score(probe: pd.DataFrame) -> pd.Series:
    """The detector's item score: the mean log-prob per token of the hidden option (higher = more likely seen)."""
    return probe["probe_logprob"].astype(float)
