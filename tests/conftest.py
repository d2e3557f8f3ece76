"""Test tiers and shared fixtures: a tiny tokenizer trained in-process, tiny random models (Gemma 3 with sliding-window
layers, and a plain Llama), and the real embedded Gemma-3-270M for the few tests marked slow."""
from __future__ import annotations

import contextlib
import subprocess

import pytest
from paths import REPO

TIERS = ("slow", "notebooks", "browser", "server", "vllm", "faults")


def pytest_collection_modifyitems(config, items):
    """Test tiers: nbval cells are `notebooks`; any test without a tier marker is `unit` (`make test-fast`)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebooks)
        elif not any(item.get_closest_marker(t) for t in TIERS):
            item.add_marker(pytest.mark.unit)


def _worktree_state() -> str | None:
    """`git status` of the checkout (tracked changes and untracked files), None outside a git checkout."""
    try:
        done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, text=True,
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def pytest_sessionstart(session):
    session.config._mcqa_worktree = _worktree_state()


def pytest_sessionfinish(session, exitstatus):
    """A test run never modifies a tracked file nor leaves files in the checkout: fail the run if it did."""
    before = getattr(session.config, "_mcqa_worktree", None)
    after = _worktree_state()
    if before is not None and after is not None and after != before:
        changed = sorted(set(after.splitlines()) ^ set(before.splitlines()))
        print("\nthe test run changed the checkout (tests must write to temporary folders only):\n  "
              + "\n  ".join(changed[:20]))
        session.exitstatus = 1


@pytest.fixture
def killed_at_call(monkeypatch):
    """`with killed_at_call(owner, "name", n): run(...)`: the n-th call of owner.name raises KeyboardInterrupt (a
    run killed mid-way), the block must end by that kill, and the real function is back afterwards."""
    @contextlib.contextmanager
    def killed(owner, name: str, n: int):
        real, calls = getattr(owner, name), {"n": 0}

        def dying(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == n:
                raise KeyboardInterrupt("killed")
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, dying)
        try:
            with pytest.raises(KeyboardInterrupt, match="killed"):
                yield
        finally:
            monkeypatch.setattr(owner, name, real)
    return killed


CORPUS = [
    "Question: What is the boiling point of water at sea level? Answer: (A) 100 degrees",
    "Questão: Qual é a capital do Brasil? Resposta: Brasília. Alternativas: A) B) C) D) E)",
    "Pregunta: ¿Cuál es la capital de España? Respuesta correcta: Madrid, la ciudad.",
    "Domanda: Qual è la capitale d'Italia? Risposta: Roma è la capitale.",
    "Options: (A) red (B) blue (C) green (D) yellow (E) black. Choose the correct answer.",
    "Here are some questions from a college entrance exam. 2 + 2 = 4, 3 x 3 = 9.",
] * 20


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<bos>", "<eos>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    from tokenizers.processors import TemplateProcessing

    tok.post_processor = TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", tok.token_to_id("<bos>"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>")


def _tiny(arch: str, tokenizer, attn: str = "sdpa"):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    common = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=512, bos_token_id=tokenizer.bos_token_id,
                  eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    if arch == "gemma3":
        from transformers import Gemma3TextConfig

        cfg = Gemma3TextConfig(num_hidden_layers=4, head_dim=8, sliding_window=16,
                               layer_types=["sliding_attention", "full_attention"] * 2,
                               final_logit_softcapping=30.0, **common)
    else:
        from transformers import LlamaConfig

        cfg = LlamaConfig(num_hidden_layers=2, **common)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    return model.to(torch.float32)


@pytest.fixture(scope="session", params=["gemma3", "llama"])
def tiny_lm(request, tiny_tokenizer):
    from mcqa_toolkit.backends.hf import wrap

    return wrap(_tiny(request.param, tiny_tokenizer), tiny_tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session")
def tiny_gemma(tiny_tokenizer):
    from mcqa_toolkit.backends.hf import wrap

    return wrap(_tiny("gemma3", tiny_tokenizer), tiny_tokenizer, name="tiny-gemma3")


@pytest.fixture(scope="session")
def tiny_backend(tiny_gemma):
    """The tiny Gemma 3 behind the Backend protocol (what run() and the scorers take)."""
    from mcqa_toolkit.backends.hf import HFBackend

    return HFBackend(tiny_gemma)


@pytest.fixture(scope="session")
def gemma():
    """The real embedded Gemma-3-270M (first load dequantises ~50 s, then cached)."""
    from mcqa_toolkit.backends.hf import load_model

    return load_model("gemma-3-270m", device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_gemma):
    """The tiny Gemma 3 saved as a local model directory: any code path taking a model name can load it."""
    d = tmp_path_factory.mktemp("tiny-gemma3")
    tiny_gemma.model.save_pretrained(d)
    tiny_gemma.tokenizer.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory):
    """A schema-exact synthetic results directory (see synthetic_results.write_synthetic_results), shared by the
    psychometrics, plot and analysis-notebook tests."""
    from synthetic_results import write_synthetic_results

    return write_synthetic_results(tmp_path_factory.mktemp("outputs"))


@pytest.fixture(scope="session")
def records(synthetic_dir):
    from mcqa_toolkit.run.store import load_results

    return load_results(synthetic_dir)
