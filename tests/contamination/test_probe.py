"""The masked-option probe (contamination.probe): which option is hidden, the left-to-right prompt, exact match and
ROUGE-L (against the textbook dynamic programme over the whole table, written again here, and a hand example), and
the table and the detector's score from a scripted model that has memorised some items' options and not others."""
import numpy as np
import pytest

from mcqa_toolkit.backends import Capabilities, ContinuationLogprobs, Generation
from mcqa_toolkit.contamination.probe import (
    PROBE_COLUMNS,
    hidden_option,
    normalise,
    probe_prompt,
    probe_score,
    probe_table,
    rouge_l,
)
from mcqa_toolkit.items import Item, ItemSet


def _item(k, answer=0, options=("Paris", "a city on the Seine river", "Rome", "the capital of Spain")):
    return Item(item_id=f"q{k}", source="t", exam="T", stem=f"  Question {k}?  ", options=options, answer=answer,
                language="en")


def test_the_longest_wrong_option_is_hidden_and_the_prompt_stops_at_its_letter():
    assert hidden_option(_item(0, answer=0)) == 1
    assert hidden_option(_item(0, answer=1)) == 3          # the key is never hidden
    assert hidden_option(_item(0, answer=0, options=("x", "ab", "cd", "e"))) == 1   # the first of equals
    p = probe_prompt(_item(0), 3)
    assert p.text == "Question 0?\nA) Paris\nB) a city on the Seine river\nC) Rome\nD)"
    assert probe_prompt(_item(0), 0).text == "Question 0?\nA)" and p.item_id == "q0"


def _lcs_table(a, b):   # the textbook (len(a)+1) x (len(b)+1) table
    t = np.zeros((len(a) + 1, len(b) + 1), dtype=int)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i, j] = t[i - 1, j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1, j], t[i, j - 1])
    return t[-1, -1]


@pytest.mark.parametrize("cand,ref", [("the cat sat on the mat", "the cat on a mat"), ("a b c d", "d c b a"),
                                      ("Capital of Spain.", "the capital of spain"), ("x", "y z"),
                                      ("one two one two", "two one two one two")])
def test_rouge_l_equals_the_longest_common_subsequence_f1(cand, ref):
    a, b = normalise(cand).split(), normalise(ref).split()
    lcs = _lcs_table(a, b)
    want = 0.0 if lcs == 0 else 2 * (lcs / len(a)) * (lcs / len(b)) / (lcs / len(a) + lcs / len(b))
    assert rouge_l(cand, ref) == pytest.approx(want)
    assert rouge_l("the cat on a mat", "the cat sat on the mat") == pytest.approx(2 * 0.8 * 4 / 6 / (0.8 + 4 / 6))
    assert rouge_l("", "x") == 0.0 and normalise("  The  Capital.\n") == "the capital"


class Memoriser:
    """Writes the hidden option of the items it 'saw' (and reads it at -0.1 per token); other items: 'something
    else' and -3 per token."""

    name = "memoriser"
    capabilities = Capabilities(next_token_logprobs=True, continuation_logprobs=True, generate=True)

    def __init__(self, items, seen):
        self.items, self.seen, self.calls = items, seen, []

    def _hidden(self, prompt):
        return self.items[prompt.item_id].options["ABCDEFGHIJ".index(prompt.text[-2])]

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, stop=(), seeds=None):
        self.calls.append((len(prompts), max_new_tokens, stop))
        return [Generation(f" {self._hidden(p)}." if p.item_id in self.seen else " something else", 9, 5, "stop")
                for p in prompts]

    def loglikelihoods(self, requests):
        out = []
        for r in requests:
            assert r.continuation == " " + self._hidden(r.context)
            n = len(r.continuation.split())
            out.append(ContinuationLogprobs(np.full(n, -0.1 if r.context.item_id in self.seen else -3.0),
                                            r.continuation, 9))
        return out


def test_probe_table_from_a_model_that_memorised_some_items():
    items = ItemSet([_item(k, answer=k % 4) for k in range(5)] + [Item(item_id="annulled", source="t", exam="T",
                                                                       stem="?", options=("a", "b"), answer=None)])
    model = Memoriser(items, {"q0", "q3"})
    table = probe_table(model, items, block_size=2)
    assert list(table.columns) == list(PROBE_COLUMNS) and list(table["item_id"]) == [f"q{k}" for k in range(5)]
    assert list(table["exact"]) == [True, False, False, True, False]
    assert list(table["rouge_l"] == 1.0) == list(table["exact"])
    np.testing.assert_allclose(table["probe_logprob"], [-0.1, -3.0, -3.0, -0.1, -3.0])
    assert list(probe_score(table)) == list(table["probe_logprob"])   # the detector ranks the memorised first
    assert list(table["hidden"]) == [hidden_option(items[f"q{k}"]) for k in range(5)]
    # two items per call; room for the longest hidden option of the call (25 characters -> 25 // 2 + 8 tokens)
    assert [c[0] for c in model.calls] == [2, 2, 1] and model.calls[0][1:] == (20, ("\n",))
    with pytest.raises(ValueError, match="needs generation"):
        probe_table(type("NoGen", (Memoriser,), {"capabilities": Capabilities(continuation_logprobs=True)})(
            items, set()), items)
