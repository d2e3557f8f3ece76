"""Splitting an echo into context and continuation (backends.echo) on accented pt/es/it text, for every offset
convention: REAL vLLM 0.32.0 responses (tests/fixtures/vllm: offsets count the decoded "<bos>", so the first
prompt character is at offset 5), character offsets (OpenAI, llama-cpp-python; the real llama-cpp-python server
is in test_llama_server.py) and UTF-8 byte offsets (some llama.cpp builds), and a clear error, never a silent
mis-split, when the tokens cannot be aligned with the prompt.

The reference split is independent of text_offset: the continuation is the text of the last n echoed prompt
tokens, so its log-probs are exactly those tokens' (checked by joining the token strings)."""
from __future__ import annotations

import json

import pytest
from fake_openai import completion, echo_offsets
from paths import FIXTURES

from mcqa_toolkit.backends.echo import parse_echo

VLLM = FIXTURES / "vllm"


def _vllm(name):
    rec = json.loads((VLLM / f"{name}.json").read_text())
    return rec["request"]["body"]["prompt"], rec["response"]


def _reference(response, n_generated, n_last):
    """(context, continuation, log-probs) when the continuation is the last `n_last` prompt tokens."""
    lp = response["choices"][0]["logprobs"]
    end = len(lp["tokens"]) - n_generated
    cont = "".join(lp["tokens"][end - n_last:end])
    return cont, lp["token_logprobs"][end - n_last:end]


@pytest.mark.parametrize("lang", ["pt", "es", "it"])
@pytest.mark.parametrize("max_tokens", [0, 1])
@pytest.mark.parametrize("n_last", [1, 2, 3])
def test_real_vllm_echo_is_split_right(lang, max_tokens, n_last):
    prompt, response = _vllm(f"b_echo_{lang}_max{max_tokens}")
    cont, expected = _reference(response, max_tokens, n_last)
    assert prompt.endswith(cont) and response["choices"][0]["logprobs"]["text_offset"][1] == 5  # "<bos>" counted
    got = parse_echo(response, prompt[:-len(cont)], cont)
    assert got.logprobs.tolist() == expected and got.text == cont
    whole = parse_echo(response, "", prompt)  # Min-K%: every prompt token after BOS has a log-prob
    lp = response["choices"][0]["logprobs"]
    assert whole.logprobs.tolist() == lp["token_logprobs"][1:len(lp["tokens"]) - max_tokens]


def test_real_vllm_echo_the_naive_reading_would_have_split_wrong():
    """Reading vLLM's offsets as prompt positions (the old split) shifts every token by the 5 characters of
    "<bos>": here the continuation " também." would have been " também" alone, its "." taken for generated."""
    prompt, response = _vllm("b_echo_pt_max1")
    lp = response["choices"][0]["logprobs"]
    ctx, cont = prompt[:-len(" também.")], " também."
    naive = [v for v, o in zip(lp["token_logprobs"], lp["text_offset"], strict=True) if len(ctx) <= o < len(prompt)]
    got = parse_echo(response, ctx, cont).logprobs.tolist()
    assert got == lp["token_logprobs"][-3:-1] and naive == lp["token_logprobs"][-3:-2]


@pytest.mark.parametrize("name", ["b_echo_bytes_emoji", "b_echo_bos_in_text", "b_echo_leading_space"])
def test_real_vllm_echo_edge_cases(name):
    """Byte-fallback pieces ("" tokens), a prompt starting with the literal text "<bos>", a leading space."""
    prompt, response = _vllm(name)
    lp = response["choices"][0]["logprobs"]
    assert parse_echo(response, "", prompt).logprobs.tolist() == lp["token_logprobs"][1:]
    cont, expected = _reference(response, 0, 2)
    assert parse_echo(response, prompt[:-len(cont)], cont).logprobs.tolist() == expected


@pytest.mark.parametrize("style", ["chars", "bytes", "vllm"])
def test_every_offset_convention_on_accented_text(style):
    ctx, cont = "Qual é a capital da Itália? Resposta: È", " Roma, già città."
    response = completion({"model": "m", "prompt": ctx + cont, "echo": True, "logprobs": 1}, offsets=style)
    lp = response["choices"][0]["logprobs"]
    n = len(" Roma, già città.".split())  # fake tokens are whitespace-led words; one generated token follows
    got = parse_echo(response, ctx, cont)
    lead = 1 if style == "vllm" else 0  # vLLM echoes its <bos>: a context token, as the local backends count it
    assert got.logprobs.tolist() == lp["token_logprobs"][-1 - n:-1]
    assert got.n_context_tokens == len(ctx.split()) + lead


def test_a_boundary_inside_a_token_goes_to_the_continuation():
    ctx, cont = "Resposta: (", "B) Roma"
    tokens, offsets = echo_offsets(["Resposta", ":", " (B", ")", " Roma", "\n"], "bytes")
    response = {"choices": [{"logprobs": {"tokens": tokens, "text_offset": offsets,
                                          "token_logprobs": [None, -1.0, -2.0, -0.5, -3.0, -0.1]}}]}
    assert parse_echo(response, ctx, cont).logprobs.tolist() == [-2.0, -0.5, -3.0]


def test_tokens_that_cannot_be_aligned_are_an_error_not_a_silent_split():
    ctx, cont = "A canção é", " bonita."
    tokens, offsets = echo_offsets(["A", " canção", " é", " bonita", ".", "\n"], "chars")
    values = [None, -1.0, -2.0, -3.0, -0.5, -0.1]
    wrong = [o + 1 if i > 2 else o for i, o in enumerate(offsets)]  # a server that miscounted from token 3 on
    with pytest.raises(ValueError, match=r"cannot be aligned with the prompt 'A canção é bonita.': as characters: "
                                         r"token 2 ' é' at offset 8 is followed at offset 11"):
        parse_echo({"choices": [{"logprobs": {"tokens": tokens, "text_offset": wrong, "token_logprobs": values}}]},
                   ctx, cont)
    other = ["A", " cancao", " é", " bonita", ".", "\n"]  # the echo of another text
    with pytest.raises(ValueError, match="cannot be aligned"):
        parse_echo({"choices": [{"logprobs": {"tokens": other, "text_offset": offsets, "token_logprobs": values}}]},
                   ctx, cont)
    with pytest.raises(ValueError, match="server ignored echo"):
        parse_echo({"choices": [{"logprobs": {"tokens": ["x"], "token_logprobs": [-1.0], "text_offset": []}}]},
                   "Q:", " A")
