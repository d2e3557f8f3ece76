"""Prompt templates and rendering: the seeds' prompt texts pinned exactly, shots, permutations, YAML errors."""
import pytest

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts import (
    Prompt,
    list_styles,
    load_template,
    render,
    select_shots,
    split_shots,
)

LANGS = ("pt", "es", "it", "en")
STYLES = ("default", "enem", "enade", "uned", "cloze")
ENEM_EN = (
    "Here are some questions from a college entrance exam. Choose the correct answer to the best of your "
    "ability, and output in the following format:\nAnswer: (Option)\n\n"
)


def _item(i="q1", stem="Which organelle makes ATP?", options=("Ribosome", "Mitochondrion", "Nucleus", "Vacuole",
          "Golgi body"), answer=1, subject="biology", language="en", irt=None, parallel_id=""):
    return Item(item_id=i, source="test", exam="T", stem=stem, options=tuple(options), answer=answer,
                subject=subject, language=language, irt=irt, parallel_id=parallel_id)


SHOT = _item("s1", "Which test separates animals by sex before breeding?",
             ("Cloning.", "Gene therapy.", "Vaccination.", "Genetic mapping.", "Grafting."), answer=3)


# --- the seeds' prompts, pinned ---------------------------------------------------------------------
def test_enem_paper_zero_shot_english_listing_3():
    p = render(_item(), load_template("en", "enem"))
    assert p.text == ENEM_EN + (
        "Question: Which organelle makes ATP?\nOptions:\n(A) Ribosome\n(B) Mitochondrion\n(C) Nucleus\n"
        "(D) Vacuole\n(E) Golgi body\nAnswer: ("
    )
    assert p.letter_continuations == ("A", "B", "C", "D", "E")
    assert p.continuations[1] == "B) Mitochondrion"
    assert p.shared_prefix == ENEM_EN and p.neutral_context == "Answer: ("


def test_enem_zero_shot_portuguese():
    item = _item(stem="Qual organela produz ATP?", options=("Ribossomo", "Mitocôndria", "Núcleo", "Vacúolo",
                 "Complexo golgiense"), language="pt")
    p = render(item, load_template("pt", "enem"))
    assert p.text == (
        "Aqui estão algumas questões de um exame de ingresso no ensino superior. Escolha a resposta correta da "
        "melhor forma possível e responda no seguinte formato:\nResposta: (Alternativa)\n\n"
        "Questão: Qual organela produz ATP?\nAlternativas:\n(A) Ribossomo\n(B) Mitocôndria\n(C) Núcleo\n"
        "(D) Vacúolo\n(E) Complexo golgiense\nResposta: ("
    )


def test_enem_one_shot_structure_listing_4():
    p = render(_item(), load_template("en", "enem"), shots=[SHOT])
    shot_block = (
        "Question: Which test separates animals by sex before breeding?\nOptions:\n(A) Cloning.\n"
        "(B) Gene therapy.\n(C) Vaccination.\n(D) Genetic mapping.\n(E) Grafting.\n"
        "Answer: (D) Genetic mapping.\n\n"
    )
    assert p.shared_prefix == ENEM_EN + shot_block
    assert p.text == ENEM_EN + shot_block + render(_item(), load_template("en", "enem")).text[len(ENEM_EN):]
    assert p.shot_ids == ("s1",)


ENADE_SYSTEM_PT = (
    "Você é um especialista em questões do ENADE (Exame Nacional de Desempenho dos Estudantes), abrangendo "
    "ciências da saúde como medicina, enfermagem, farmácia, fisioterapia, nutrição, odontologia, "
    "fonoaudiologia, psicologia e biomedicina, além de formação geral.\n"
    "Analise cuidadosamente todas as alternativas antes de escolher.\n"
    "Responda APENAS com a letra da alternativa correta (A, B, C, D).\n"
    "Não inclua explicações, ponto final ou qualquer outro texto."
)
ENADE_USER_PT = (
    "Leia a questão do ENADE abaixo e escolha a alternativa correta (A, B, C, D).\n"
    "Responda no formato exato: \"Resposta: X\" — sem mais texto.\n\n"
    "Questão:\nO que mede a pressão arterial?\n\nAlternativas:\nA) Termômetro\nB) Esfigmomanômetro\n"
    "C) Oxímetro\nD) Balança"
)


def test_enade_zero_shot_portuguese_with_system_message():
    item = _item(stem="O que mede a pressão arterial?", options=("Termômetro", "Esfigmomanômetro", "Oxímetro",
                 "Balança"), language="pt")
    t = load_template("pt", "enade")
    p = render(item, t)
    assert p.text == ENADE_USER_PT + "\n\nResposta:"
    assert p.letter_continuations == (" A", " B", " C", " D") and p.continuations[1] == " Esfigmomanômetro"
    assert p.messages is None
    chat = render(item, t, chat=True)
    assert chat.messages == (
        {"role": "system", "content": ENADE_SYSTEM_PT}, {"role": "user", "content": ENADE_USER_PT}
    )
    assert chat.assistant_prefix == "" and chat.letter_continuations == ("A", "B", "C", "D")
    assert chat.neutral_context + chat.continuations[1] == "Resposta: Esfigmomanômetro"
    assert chat.text == p.text


def test_enade_one_shot_example_block():
    shot = _item("s9", "Qual vitamina o sol ajuda a produzir?", ("A", "B", "C", "D"), answer=3, language="pt")
    item = _item(stem="Qual osso é o maior?", options=("Fêmur", "Tíbia", "Úmero", "Rádio"), language="pt")
    p = render(item, load_template("pt", "enade"), shots=[shot])
    assert p.text.endswith(
        "(A, B, C, D).\nResponda no formato exato: \"Resposta: X\" — sem mais texto.\n\n"
        "Exemplo:\nQuestão:\nQual vitamina o sol ajuda a produzir?\n\nAlternativas:\nA) A\nB) B\nC) C\nD) D\n\n"
        "Resposta: D\n\nAgora responda:\n\nQuestão:\nQual osso é o maior?\n\nAlternativas:\nA) Fêmur\n"
        "B) Tíbia\nC) Úmero\nD) Rádio\n\nResposta:"
    )


@pytest.mark.parametrize("lang, system, user, assistant", [
    ("en", "You are an expert system for answering exam questions.",
     "Answer the following question of the subject Biology only with the letter of the correct answer. Question: ",
     "Letter of the correct answer:"),
    ("es", "Eres un sistema experto en responder preguntas de exámenes.",
     "Responde a la siguiente pregunta de la asignatura Biology, tan solo con la letra de la respuesta correcta. "
     "Pregunta: ", "Letra de la respuesta correcta:"),
])
def test_uned_system_user_assistant_with_subject(lang, system, user, assistant):
    item = _item(stem="Where is DNA?", options=("Nucleus", "Membrane", "Wall"), subject="Biology", language=lang)
    p = render(item, load_template(lang, "uned"), chat=True)
    assert p.messages == ({"role": "system", "content": system},
                          {"role": "user", "content": user + "Where is DNA?\nA. Nucleus\nB. Membrane\nC. Wall"})
    assert p.assistant_prefix == assistant
    assert p.letter_continuations == (" A", " B", " C")
    assert p.text == user + "Where is DNA?\nA. Nucleus\nB. Membrane\nC. Wall\n" + assistant


def test_uned_needs_a_subject():
    with pytest.raises(ValueError, match="no subject.*uned"):
        render(_item(subject=""), load_template("en", "uned"))


def test_medicina_cloze_and_multiple_choice():
    item = _item(stem="Quale gas producono le piante alla luce?", options=("Azoto", "Ossigeno", "Elio", "Neon",
                 "Argon"), language="it")
    cloze = render(item, load_template("it", "cloze"))
    assert cloze.text == "Domanda: Quale gas producono le piante alla luce?\nRisposta:"
    assert cloze.continuations == (" Azoto", " Ossigeno", " Elio", " Neon", " Argon")
    assert cloze.letter_continuations == () and cloze.neutral_context == "Risposta:"
    mc = render(item, load_template("it", "default"))
    assert mc.text == (
        "Di seguito sono riportate domande a scelta multipla (con le risposte).\n\n"
        "Domanda: Quale gas producono le piante alla luce?\nA. Azoto\nB. Ossigeno\nC. Elio\nD. Neon\nE. Argon\n"
        "Risposta:"
    )
    assert mc.letter_continuations[0] == " A" and mc.continuations[0] == " Azoto"
    # any style can be rendered cloze-like
    assert "A. Azoto" not in render(item, load_template("it", "default"), with_options=False).text


# --- permutations, letters, continuations -------------------------------------------------------------
def test_permutation_reorders_options_keeps_letters():
    perm = (4, 2, 0, 1, 3)
    p = render(_item(), load_template("en", "default"), permutation=perm, shuffle=3)
    assert p.permutation == perm and p.shuffle == 3 and p.letters == "ABCDE"
    assert "\nA. Golgi body\nB. Nucleus\nC. Ribosome\nD. Mitochondrion\nE. Vacuole\nAnswer:" in p.text
    assert p.continuations == (" Golgi body", " Nucleus", " Ribosome", " Mitochondrion", " Vacuole")
    assert p.letter_continuations == (" A", " B", " C", " D", " E")
    with pytest.raises(ValueError, match="not a permutation"):
        render(_item(), load_template("en", "default"), permutation=(0, 1, 2, 3, 3))


@pytest.mark.parametrize("n", [2, 3, 10])
def test_two_to_ten_options(n):
    item = _item(options=[f"opt{i}" for i in range(n)], answer=0)
    p = render(item, load_template("es", "enade"))
    letters = "ABCDEFGHIJ"[:n]
    assert p.letters == letters and len(p.continuations) == n
    assert f"({', '.join(letters)})" in p.text and f"\n{letters[-1]}) opt{n - 1}\n" in p.text


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("style", STYLES)
def test_every_style_loads_and_respects_the_conventions(lang, style):
    assert set(STYLES) <= set(list_styles(lang))
    t = load_template(lang, style)
    items = [_item(f"q{i}", f"stem {i}?", [f"o{i}{j}" for j in range(4)], answer=i % 4, language=lang,
                   subject="Biology") for i in range(6)]
    shots = [(_item("sA", "shot?", ("x", "y", "z", "w"), answer=2, language=lang, subject="Biology"), (1, 2, 0, 3))]
    prompts = [render(it, t, shots=shots, permutation=(3, 1, 0, 2), chat=chat)
               for it in items for chat in (False, True)]
    assert len({p.shared_prefix for p in prompts}) == 1  # the few-shot block is shared by every item
    for p in prompts:
        assert isinstance(p, Prompt) and p.text.startswith(p.shared_prefix)
        assert not p.text.endswith(" ")
        if p.messages is None:  # in chat mode the neutral cue keeps its space when the assistant prefix has none
            assert not p.neutral_context.endswith(" ")
        assert len(p.continuations) == 4
        assert len(p.letter_continuations) == (4 if t.show_options else 0)
        if p.messages:
            assert p.messages[-1]["role"] == "user" and not p.assistant_prefix.endswith(" ")


def test_shot_that_is_the_target_is_rejected():
    with pytest.raises(ValueError, match="target item"):
        render(SHOT, load_template("en", "enem"), shots=[SHOT])
    with pytest.raises(ValueError, match="shots\\[0\\]"):
        render(_item(), load_template("en", "enem"), shots=["s1"])


# --- few-shot selection -----------------------------------------------------------------------------
def _pool():
    items = []
    for s, subject in enumerate(("CN", "CH", "LC", "MT")):
        for j in range(3):
            b = -2.0 + s * 0.5 + j  # the first item of each subject is its easiest
            for lang in ("pt", "en"):
                items.append(_item(f"{subject}{j}-{lang}", f"{subject} {j}", ("a", "b", "c", "d", "e"),
                                   answer=(s + j) % 2, subject=subject, language=lang, irt=(1.0, b, 0.2),
                                   parallel_id=f"{subject}{j}"))
    return ItemSet(items)


def test_easiest_one_shot_same_subject_same_language():
    pool = _pool()
    target = _item("t", subject="CH", language="pt")
    shots = select_shots(pool, target, 1, "easiest", balance_letters=False)
    assert [(s.item_id, p) for s, p in shots] == [("CH0-pt", (0, 1, 2, 3, 4))]


def test_easiest_four_shots_own_subject_first_letters_balanced():
    pool = _pool()
    target = _item("t", subject="LC", language="en")
    shots = select_shots(pool, target, 4, "easiest", seed=0)
    assert [s.item_id for s, _ in shots] == ["LC0-en", "CN0-en", "CH0-en", "MT0-en"]
    positions = [p.index(s.answer) for s, p in shots]
    assert len(set(positions)) == 4  # four answers on four different letters
    # the first shot keeps its order; the others move only the key (a transposition)
    assert shots[0][1] == (0, 1, 2, 3, 4)
    assert all(sum(a != b for a, b in zip(p, range(5), strict=True)) in (0, 2) for _, p in shots)
    assert select_shots(pool, target, 4, "easiest", seed=0) == shots
    text = render(target, load_template("en", "enem"), shots=shots).text
    assert text.count("Answer: (") == 1 + 4 + 1  # instruction, four shots, cue


def test_balancing_keeps_original_order_when_letters_already_differ():
    shots = [_item(f"s{i}", f"q{i}", ("a", "b", "c", "d", "e"), answer=a, subject=f"S{i}", irt=(1, -i, 0))
             for i, a in enumerate((3, 0, 1, 4))]  # D, A, B, E as in the paper's 4-shot prompt
    out = select_shots(shots, _item("t"), 4, "ids", ids=[s.item_id for s in shots])
    assert [p for _, p in out] == [(0, 1, 2, 3, 4)] * 4


def test_balancing_beyond_the_number_of_options_uses_least_used_letters():
    shots = [_item(f"s{i}", f"q{i}", ("a", "b"), answer=0) for i in range(4)]
    out = select_shots(shots, _item("t"), 4, "ids", ids=[s.item_id for s in shots])
    assert sorted(p.index(s.answer) for s, p in out) == [0, 0, 1, 1]


def test_random_shots_are_seeded_shared_and_parallel_across_languages():
    pool = _pool()
    a = select_shots(pool, _item("t1", language="pt"), 3, "random", seed=5)
    b = select_shots(pool, _item("t2", language="pt"), 3, "random", seed=5)
    en = select_shots(pool, _item("t3", language="en"), 3, "random", seed=5)
    assert a == b  # same block for every target: prefix sharing works
    assert [s.parallel_id for s, _ in en] == [s.parallel_id for s, _ in a]
    assert [p for _, p in en] == [p for _, p in a]
    assert select_shots(pool, _item("t1", language="pt"), 3, "random", seed=6) != a
    assert all(s.language == "pt" for s, _ in a)


def test_ids_rule_and_errors():
    pool = _pool()
    target = _item("t", language="pt", parallel_id="MT1")
    out = select_shots(pool, target, 2, "ids", ids=["MT0-pt", "CN2-pt"], balance_letters=False)
    assert [s.item_id for s, _ in out] == ["MT0-pt", "CN2-pt"]
    with pytest.raises(ValueError, match="not in the shot pool"):
        select_shots(pool, target, 1, "ids", ids=["nope"])
    with pytest.raises(ValueError, match="translation"):
        select_shots(pool, target, 1, "ids", ids=["MT1-en"])
    with pytest.raises(ValueError, match="k=2"):
        select_shots(pool, target, 2, "ids", ids=["MT0-pt"])
    with pytest.raises(ValueError, match="rule must be one of"):
        select_shots(pool, target, 1, "hardest")
    with pytest.raises(ValueError, match="subject 'XX'"):
        select_shots(pool, _item("t", subject="XX", language="pt"), 1, "easiest")
    with pytest.raises(ValueError, match="needs 5 subjects"):
        select_shots(pool, _item("t", subject="CN", language="pt"), 5, "easiest")
    assert select_shots(pool, target, 0, "random") == []


def test_split_shots_keeps_shots_and_their_translations_out_of_evaluation():
    items = _pool()
    pool, evaluated = split_shots(items, 4, "easiest")
    assert sorted(pool.ids) == sorted(f"{s}0-{lang}" for s in ("CN", "CH", "LC", "MT") for lang in ("pt", "en"))
    assert not set(pool.ids) & set(evaluated.ids) and len(evaluated) == len(items) - 8
    for target in evaluated:
        assert len(select_shots(pool, target, 4, "easiest")) == 4
    rpool, revaluated = split_shots(items, 2, "random", seed=1)
    assert len(rpool) == 4 and len({it.parallel_id for it in rpool}) == 2
    assert not {it.parallel_id for it in rpool} & {it.parallel_id for it in revaluated}
    ipool, ieval = split_shots(items, 1, "ids", ids=["CN1-en"])
    assert ipool.ids == ["CN1-en"] and "CN1-pt" not in ieval
    with pytest.raises(ValueError, match="not among the items"):
        split_shots(items, 1, "ids", ids=["zzz"])
    assert split_shots(items, 0, "easiest")[1].ids == items.ids


# --- YAML errors --------------------------------------------------------------------------------------
def _yaml(tmp_path, body):
    f = tmp_path / "mine.yaml"
    f.write_text(body, encoding="utf-8")
    return f


GOOD = """language: en
styles:
  mine:
    system: ""
    instruction: "Pick one ({valid_letters}).\\n\\n"
    question: "Q: {stem}\\n"
    options_header: ""
    option: "{letter}: {text}\\n"
    answer_cue: "A: "
    shot_prefix: ""
    shot_answer: "{letter}"
    shot_separator: "\\n\\n"
    shots_footer: ""
    continuation: "{text}"
    assistant_prefix: "A: "
    neutral_cue: "A: "
    show_options: true
"""


def test_user_yaml_file(tmp_path):
    t = load_template("en", "mine", path=_yaml(tmp_path, GOOD))
    p = render(_item(options=("x", "y")), t)
    assert p.text == "Pick one (A, B).\n\nQ: Which organelle makes ATP?\nA: x\nB: y\nA:"


def test_a_template_is_parsed_once_per_version_of_its_file(tmp_path):
    """The runner asks for the template of every prompt: parsing the YAML each time cost 70 ms an item."""
    assert load_template("en", "default") is load_template("en", "default")
    f = _yaml(tmp_path, GOOD)
    first = load_template("en", "mine", path=f)
    assert load_template("en", "mine", path=f) is first
    f.write_text(GOOD.replace("Pick one", "Choose one"), encoding="utf-8")  # edited: size (and mtime) change
    assert load_template("en", "mine", path=f).instruction.startswith("Choose one")


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace('    neutral_cue: "A: "\n', ""), r"styles\.mine: missing key\(s\) \['neutral_cue'\]"),
    (lambda s: s + "    colour: red\n", r"unknown key\(s\) \['colour'\]"),
    (lambda s: s.replace("{stem}", "{stme}"), r"styles\.mine\.question: unknown placeholder\(s\) \['stme'\]"),
    (lambda s: s.replace('option: "{letter}: {text}\\n"', "option: 3"), r"styles\.mine\.option: must be a string"),
    (lambda s: s.replace("show_options: true", "show_options: yes please"), r"show_options: must be true or false"),
    (lambda s: s.replace("language: en", "language: pt"), r"key 'language' is 'pt'"),
    (lambda s: s.replace('"Q: {stem}\\n"', '"Q: {stem\\n"'), r"styles\.mine\.question: bad braces"),
    (lambda s: s.replace("styles:", "styles: [\n"), r"invalid YAML"),
])
def test_yaml_errors_name_file_and_key(tmp_path, edit, message):
    f = _yaml(tmp_path, edit(GOOD))
    with pytest.raises(ValueError, match=message) as e:
        load_template("en", "mine", path=f)
    assert str(f) in str(e.value)


def test_unknown_language_or_style():
    with pytest.raises(ValueError, match=r"language 'fr'.*available: \['en', 'es', 'it', 'pt'\]"):
        load_template("fr")
    with pytest.raises(ValueError, match=r"en\.yaml: unknown style 'fancy'"):
        load_template("en", "fancy")
    with pytest.raises(ValueError, match="template file not found"):
        load_template("en", path="/nonexistent/x.yaml")
