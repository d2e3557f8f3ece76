"""datasets.mojibake: UTF-8 read as cp1252 / latin-1 is repaired where the repair is unambiguous, real text is left
alone (accented capitals before quotes and ellipses included), and what cannot be repaired is reported, never
guessed. The mojibake is made by Python's own codecs (the independent reference), from sentences written here."""
import pytest

from mcqa_toolkit.datasets.mojibake import repair

SENTENCES = [
    "Questão 1: a ação de cobrança é “válida”, nº 5, § 2º — diz o réu…",
    "À luz da lei, à noite, o Ângelo pôs a mão no pão; ÍNDICE, ÓRGÃO, AÇÃO.",
    "¿Cuál es la situación del niño? Está en el país — según la señora.",
    "O preço foi de R$ 10,00 (dez reais) + 5% ± 1°C; «citação» ‘simples’.",
]


def cp1252(text: str) -> str:
    """`text`'s UTF-8 bytes as cp1252 shows them (its five undefined bytes as the latin-1 control characters)."""
    return "".join(chr(b) if b in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else bytes([b]).decode("cp1252")
                   for b in text.encode("utf-8"))


@pytest.mark.parametrize("text", SENTENCES)
def test_mojibake_is_undone_exactly(text):
    broken = cp1252(text)
    assert broken != text
    for garbled in (broken, text.encode("utf-8").decode("latin-1"), cp1252(broken)):  # cp1252, latin-1, twice
        fixed = repair(garbled)
        assert fixed.text == text and fixed.repaired > 0 and not fixed.unrepaired


@pytest.mark.parametrize("text", SENTENCES + ["IRMÃ” disse ATÉ… logo; NÃO SEI", "Ó” e Ã–", "plain ASCII"])
def test_real_text_is_left_alone(text):
    """An accented capital before a closing quote, an ellipsis or a dash can look like mojibake: with nothing
    unambiguous beside it, the text is not touched."""
    assert repair(text) == repair(text).__class__(text, 0, False)


def test_what_cannot_be_repaired_is_kept_and_reported():
    lost = "o prÃncipe e a aÃ§Ã£o"            # "í" lost its second byte (a soft hyphen), "ação" did not
    fixed = repair(lost)
    assert fixed.text == "o prÃncipe e a ação" and fixed.repaired == 2 and fixed.unrepaired
    replaced = cp1252("“aspas”").replace("\x9d", "\ufffd")   # the undefined byte already replaced by U+FFFD
    fixed = repair(replaced)
    assert fixed.unrepaired and "�" in fixed.text and fixed.text.startswith("“aspas")
    assert repair("texto com \x85 controle").unrepaired
