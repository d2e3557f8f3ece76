"""TokenCache (backends/hf/segments.py) gives exactly the ids of encoding every text whole, encodes each shared
segment once, and encodes whole what it cannot cut safely. Tokenizers: Gemma's kind (one word, '▁' for spaces)
trained in-process, with newline runs as added tokens and without (then BPE merges join a newline to the next
word, and only the cuts the vocabulary allows are taken), and the byte-level one of the engine tests (a regex
pre-tokenizer: not supported, encoded whole). The real Gemma tokenizer on real-length prompts is in
test_hf_real_model.py."""
import re

import pytest
from tiny_models import CORPUS, one_word_tokenizer

from mcqa_toolkit.backends.hf.segments import TokenCache, newline_followers

SHOTS = "Here are some questions from a college entrance exam.\n\n" + "".join(
    f"Question: {line}\nAnswer: (B)\n\n" for line in CORPUS[:5])


def _texts():
    """Prompts of two items after one few-shot block, each in three option orders, with and without a letter,
    plus texts whose lines start with the characters a merge joins to a newline ('Q', 'H', 'O', 'P')."""
    out = []
    for stem in ("What colour is the sky?", "Qual é a capital do Brasil?\nPregunta: y"):
        for perm in (("red", "blue", "green"), ("blue", "green", "red"), ("green", "red", "blue")):
            text = SHOTS + f"Question: {stem}\nOptions:\n" + "".join(f"({x}) {o}\n"
                                                                     for x, o in zip("ABC", perm, strict=True))
            out += [text + "Answer: (", text + "Answer: (A", text + "Answer: ( B"]
    return out + ["9.\nQuestion: What", "answer.\nHere are", "x.\nQuestion: a\n\n\nOptions:", "", "\n", "a\n"]


def _whole(tok, texts, special=True):
    return [tuple(tok(t, add_special_tokens=special).input_ids) for t in texts]


@pytest.mark.parametrize("newline_tokens", [True, False])
def test_cached_ids_equal_whole_texts(newline_tokens):
    tok = one_word_tokenizer(newline_tokens=newline_tokens)
    cache = TokenCache(tok)
    assert cache.supported
    texts = _texts()
    for special in (True, False):
        assert cache.encode_batch(texts, special) == _whole(tok, texts, special)
        assert [cache.encode(t, special) for t in texts[:3]] == _whole(tok, texts[:3], special)
    # the few-shot block and each stem were encoded once: a fraction of the characters seen
    assert cache.stats["encoded_chars"] < 0.2 * cache.stats["chars"]


def test_cuts_skip_what_merges_join_across_a_newline():
    """Without added newline tokens, merges such as '.\\nQuestion' cross a newline: cutting there would change the
    ids (checked), so those cuts are not taken; cuts before other characters are."""
    tok = one_word_tokenizer(newline_tokens=False)
    followers = newline_followers(tok)
    assert {"Q", "H"} <= followers and "D" not in followers
    text = "9.\nQuestion: What"
    cut = text.index("\n") + 1
    assert _whole(tok, [text])[0] != tuple(tok(text[:cut]).input_ids) + tuple(
        tok(text[cut:], add_special_tokens=False).input_ids)
    cache = TokenCache(tok)
    assert (cache.encode_batch([text, "Madrid, la ciudad.\nDomanda"])
            == _whole(tok, [text, "Madrid, la ciudad.\nDomanda"]))
    assert cache.stats["encoded_chars"] == len(text) + len("Madrid, la ciudad.\n") + len("Domanda")


def test_a_naive_cut_would_be_caught():
    """The equality test can fail: cutting after every newline (ignoring the vocabulary) gives other ids."""
    tok = one_word_tokenizer(newline_tokens=False)
    cache = TokenCache(tok)
    assert cache.supported
    cache._cut = re.compile("\n(?=[^\n])")
    assert cache.encode_batch(_texts()) != _whole(tok, _texts())


@pytest.mark.parametrize("kind", ["byte-level", "appends eos", "prepends to every text"])
def test_unsupported_tokenizers_are_encoded_whole(tiny_tokenizer, kind):
    from tokenizers import normalizers

    tok = {"byte-level": lambda: tiny_tokenizer,
           "appends eos": lambda: one_word_tokenizer(post="<bos> $A <eos>"),
           "prepends to every text": lambda: one_word_tokenizer(normalizer=normalizers.Sequence(
               [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]))}[kind]()
    assert newline_followers(tok) is None
    cache = TokenCache(tok)
    texts = _texts()
    assert cache.encode_batch(texts) == _whole(tok, texts) and not cache.supported
    assert cache.stats["encoded_chars"] == cache.stats["chars"]


def test_a_full_cache_starts_over():
    tok = one_word_tokenizer()
    cache = TokenCache(tok, max_segments=8)
    texts = _texts()
    assert cache.encode_batch(texts) == _whole(tok, texts)
    assert cache.encode_batch(texts[::-1]) == _whole(tok, texts[::-1])
    assert len(cache._segments) <= max(8, len({s for t in texts for s in cache.split(t)}) + 1)


SUFFIXES = ["A", " B", "(C", "\nQuestion", "\n\nD) red", "", "x\ny"]


@pytest.mark.parametrize("kind", ["newline tokens", "merges across newlines", "byte-level"])
def test_extensions_equal_whole_texts(kind, tiny_tokenizer):
    """encode_extensions: ids[:n] + tail of each text + suffix are the whole string's ids, whatever the suffix
    (one that starts a new segment after a text ending in a newline, one holding newlines, an empty one), for an
    empty text, a one-segment text with special tokens, and an unsupported tokenizer (encoded whole, n = 0)."""
    tok = {"newline tokens": lambda: one_word_tokenizer(), "merges across newlines":
           lambda: one_word_tokenizer(newline_tokens=False), "byte-level": lambda: tiny_tokenizer}[kind]()
    cache = TokenCache(tok)
    texts = _texts()
    for special in (True, False):
        got = cache.encode_extensions(texts, [SUFFIXES] * len(texts), special)
        for text, (ids, tails) in zip(texts, got, strict=True):
            assert ids == _whole(tok, [text], special)[0]
            for x, (n, tail) in zip(SUFFIXES, tails, strict=True):
                assert ids[:n] + tail == _whole(tok, [text + x], special)[0], (text[-20:], x)
                assert kind == "byte-level" and n == 0 or len(tail) < len(ids) or len(text) < 40
