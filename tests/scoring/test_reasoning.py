"""Reasoning before the answer (scoring.reasoning, the `cot` method): on reasoning outputs of our own writing
(letters inside the reasoning, <think> blocks, a separate reasoning_content), the extracted answer is always the
final one, the reasoning text is kept in the record and the token usage is split where reported. The API path
(reasoning_content, reasoning tokens) runs against the OpenAI-compatible stand-in on 127.0.0.1."""
from __future__ import annotations

import json

import pytest
from fake_api import FakeAPI
from fake_openai import REASONING_TEXT, best_letter, provider_route

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.prompts import load_template, render
from mcqa_toolkit.run import run, strategy
from mcqa_toolkit.scoring.reasoning import final_answer, read_answer, split_reasoning

COT = [  # (language, output, final letter)
    ("pt", "A alternativa A fala de X, o que está errado. Resposta: A? Não: a B descreve Y.\n"
           "Portanto, a C é a correta.\nResposta: C", "C"),
    ("es", "La opción B parece correcta, pero la respuesta correcta es la D porque...\nRespuesta: D", "D"),
    ("it", "Risposta: A sarebbe sbagliata. Considero B ed E.\nQuindi E.\nRisposta finale: E", "E"),
    ("en", "Answer: B is tempting, but (C) fits the data.\nFinal answer: **C**", "C"),
    ("pt", "Analisando: A) errada; B) errada; D) certa.\nLogo, a alternativa correta é a D.", "D"),
    ("pt", "Resposta: B\n\nQuestão: Qual é a capital?\nA) Roma\nResposta: A", "B"),  # a base model goes on inventing
]


@pytest.mark.parametrize("language,text,letter", COT)
def test_the_final_answer_never_a_letter_inside_the_reasoning(language, text, letter):
    got = final_answer(text, "ABCDE", language)
    assert (got.letter, got.status) == (letter, "answered") and got.rule.startswith("final_")


def test_think_blocks_and_separate_reasoning():
    text = f"<think>{REASONING_TEXT} Resposta: A</think>\n\nResposta: D"
    assert split_reasoning(text) == (f"{REASONING_TEXT} Resposta: A", "Resposta: D", True)
    ex, answer, thinking = read_answer(text, "", "ABCDE", "pt", final=False)  # even the plain cascade
    assert (ex.letter, answer, thinking) == ("D", "Resposta: D", f"{REASONING_TEXT} Resposta: A")
    ex, _, thinking = read_answer("Resposta: B", "Talvez A... Resposta: A", "ABCDE", "pt", final=True)
    assert ex.letter == "B" and thinking == "Talvez A... Resposta: A"
    ex, answer, thinking = read_answer("<think>Hmm, A ou B? Resposta: A", "", "ABCDE", "pt", final=True)
    assert (ex.letter, ex.status, ex.rule) == (None, "unanswered", "think_unclosed") and thinking.startswith("Hmm")
    assert final_answer("Difícil dizer; faltam dados.", "ABCDE", "pt").status == "unanswered"
    assert final_answer("Pensei muito.\nNão sei responder.", "ABCDE", "pt").status == "refused"


@pytest.mark.parametrize("language,label", [("pt", "Resposta"), ("es", "Respuesta"), ("it", "Risposta"),
                                            ("en", "Answer")])
def test_cot_strategy_asks_to_think_then_answer_in_the_prompt_language(language, label):
    item = load("demo", language=language)[0]
    prompt = render(item, load_template(language, strategy("cot").style))
    assert f'"{label}: X"' in prompt.text and strategy("cot").method == "cot" and not strategy("cot").stop


@pytest.mark.parametrize("model,where", [("deepseek-r1", "reasoning_content"), ("qwq-think", "<think>"),
                                         ("o4-mini", "reasoning_tokens")])
def test_reasoning_models_through_the_api_keep_reasoning_and_split_tokens(tmp_path, model, where):
    items = load("demo", language="pt").filter(subject="chemistry")[:3]
    with FakeAPI() as api:
        api.route("POST", "/v1/chat/completions", provider_route("openai" if model == "o4-mini" else "vllm"))
        backend = load_backend({"backend": "openai", "model": model, "base_url": api.url + "/v1", "probe": False,
                                "provider": "openai" if model == "o4-mini" else "vllm",
                                "cache_dir": str(tmp_path / "c")})
        df = run(items, backend, strategy("cot_chat", max_new_tokens=64), tmp_path / "r", progress=False)
        assert not api.rejected()
    extra = df["extra"].map(json.loads)
    finals = df["generated_text"].map(lambda t: t.rsplit("Resposta: ", 1)[1][0])  # what the model answered last
    assert ["ABCDE"[c] for c in df["choice"]] == finals.tolist() and set(df["extraction_rule"]) == {"final_label_pt"}
    assert sorted(finals) == sorted(best_letter("\n".join(m["content"] for m in r.json["messages"]))
                                    for r in api.requests)
    if where == "reasoning_tokens":
        assert (extra.map(lambda e: (e["reasoning_tokens"], e["answer_tokens"])) == (40, 3)).all()
    else:
        assert (extra.map(lambda e: e["reasoning"].startswith("A alternativa A parece certa"))).all()
        assert (df["generated_text"].str.contains("<think>") == (where == "<think>")).all()
