"""Engine requests for the engine tests (CPU and GPU): letter and option requests of short questions after a
few-shot prefix, and items with long options whose rows run past a 16-token sliding window."""
from __future__ import annotations

from mcqa_toolkit.backends.hf.engine import Request
from mcqa_toolkit.backends.hf.tokens import context_continuation, encode, next_token_candidates

PREFIX = "Here are some questions from a college entrance exam.\n\n" + \
         "Question: What is 2 + 2?\nOptions:\n(A) 3\n(B) 4\n(C) 5\nAnswer: (B) 4\n\n" * 3


def requests_for(lm, stems=("What colour is the sky?", "Qual é a capital do Brasil?")) -> list[Request]:
    """Per stem and option order: one letter request and one request per option text."""
    reqs = []
    letters = ["A", "B", "C"]
    for stem in stems:
        for perm in (("red", "blue", "green"), ("blue", "green", "red"), ("green", "red", "blue")):
            text = PREFIX + f"Question: {stem}\nOptions:\n" + "".join(
                f"({x}) {o}\n" for x, o in zip(letters, perm, strict=True)) + "Answer: ("
            ids = encode(lm, text)
            cands, _ = next_token_candidates(lm, ids, text, letters)
            reqs.append(Request(ids, len(ids), cands))
            for o in perm:
                ctx, cont = context_continuation(lm, text[: -len(" (")], " " + o)
                reqs.append(Request(ctx + cont, len(ctx)))
    return reqs


# option texts long enough that an item's suffix rows run well past the tiny Gemma's 16-token sliding window
LONG_OPTIONS = ("the red planet seen from the desert at night, bright and steady above the capital",
                "blue, because the capital of Brazil is far from the sea and the sky is clear there",
                "green like the boiling water of the exam question, 100 degrees at sea level")


def long_requests(lm) -> list[Request]:
    """Letter and option requests of one question with long options, in three option orders."""
    long_reqs = []
    for perm in (LONG_OPTIONS, LONG_OPTIONS[::-1], LONG_OPTIONS[1:] + LONG_OPTIONS[:1]):
        text = PREFIX + "Question: Which one is right?\nOptions:\n" + "".join(
            f"({x}) {o}\n" for x, o in zip("ABC", perm, strict=True)) + "Answer: ("
        ids = encode(lm, text)
        long_reqs.append(Request(ids, len(ids), next_token_candidates(lm, ids, text, list("ABC"))[0]))
        for o in perm:
            ctx, cont = context_continuation(lm, text[: -len(" (")], " " + o)
            long_reqs.append(Request(ctx + cont, len(ctx)))
    return long_reqs


def short_prefix_item(lm, stem: str) -> list[Request]:
    """Letter requests whose options start right after `stem`: the item prefix is `stem` plus a few tokens, shorter
    than the tiny Gemma's 16-token sliding window (so its rows need the run prefix's last keys on sliding layers)."""
    out = []
    for perm in (("red", "blue", "green"), ("blue", "green", "red"), ("green", "red", "blue")):
        text = PREFIX + stem + "".join(f"({x}) {o}\n" for x, o in zip("ABC", perm, strict=True)) + "Answer: ("
        ids = encode(lm, text)
        out.append(Request(ids, len(ids), next_token_candidates(lm, ids, text, list("ABC"))[0]))
    return out


def block_items(lm) -> list[list[Request]]:
    """Four items for one block: item prefixes of different lengths, two shorter than the sliding window, one
    with long options (rows past the window), letters and options mixed."""
    return [short_prefix_item(lm, ""), short_prefix_item(lm, "Q: ok\n"),
            requests_for(lm, stems=("What colour is the sky above the capital of Brazil at noon in the summer?",)),
            long_requests(lm)]
