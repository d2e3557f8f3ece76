"""Tiny models for the engine tests, importable by name (a `from conftest import` would find whichever conftest
was imported first): a BPE tokenizer trained in-process and random Gemma 3 / Llama models built from configs."""
from __future__ import annotations

CORPUS = [
    "Question: What is the boiling point of water at sea level? Answer: (A) 100 degrees",
    "Questão: Qual é a capital do Brasil? Resposta: Brasília. Alternativas: A) B) C) D) E)",
    "Pregunta: ¿Cuál es la capital de España? Respuesta correcta: Madrid, la ciudad.",
    "Domanda: Qual è la capitale d'Italia? Risposta: Roma è la capitale.",
    "Options: (A) red (B) blue (C) green (D) yellow (E) black. Choose the correct answer.",
    "Here are some questions from a college entrance exam. 2 + 2 = 4, 3 x 3 = 9.",
] * 20


def tiny_tokenizer():
    """A byte-level BPE tokenizer (400 tokens, <bos> prepended) trained in-process on a few exam-like lines."""
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


def one_word_tokenizer(post: str = "<bos> $A", normalizer=None, newline_tokens: bool = True):
    """A BPE tokenizer of Gemma's kind (spaces replaced by '▁', no pre-tokenizer: a text is one word, byte fallback,
    newline runs as added tokens), trained in-process on exam-like lines joined by newlines (so merges such as
    '\nQ' exist and the segment cache must not cut there). `post`: the post-processor's template; `newline_tokens`
    False: newlines are left to the BPE merges (which then join them to the next word)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, trainers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizer or normalizers.Replace(" ", "\u2581")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<pad>", "<bos>", "<eos>", "<unk>"],
                                  initial_alphabet=[f"<0x{i:02X}>" for i in range(256)], show_progress=False)
    tok.train_from_iterator(["\n".join(CORPUS[i: i + 3]) + "\nQuestion:" for i in range(0, 60, 3)], trainer)
    if newline_tokens:
        tok.add_tokens([AddedToken("\n" * k, normalized=False) for k in (1, 2, 3)])
    tok.post_processor = TemplateProcessing(single=post, special_tokens=[
        (t, tok.token_to_id(t)) for t in ("<bos>", "<eos>") if t in post])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>")


# real models' head sizes and GQA ratios on a few layers, for the GPU tests (attention kernels pick their code
# by head size; 8-wide heads would not take the paths a 1B-70B model takes)
GPU_SIZES = {"gemma3": dict(hidden_size=640, intermediate_size=2048, num_attention_heads=4, num_key_value_heads=1,
                            head_dim=256),
             "llama": dict(hidden_size=1024, intermediate_size=2816, num_attention_heads=8, num_key_value_heads=2)}


def tiny_model(arch: str, tokenizer, attn: str = "sdpa", size: str = "tiny"):
    """A random fp32 causal LM: Gemma 3 (sliding and full layers, logit soft-capping) or a plain Llama.
    `size="gpu"`: real head sizes (Gemma 3 256 with one KV head, Llama 128 with GQA 4:1), same layer layout."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    widths = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=8)
    if size == "gpu":
        widths = {**widths, **GPU_SIZES[arch]}
    head_dim = widths.pop("head_dim")
    common = dict(vocab_size=len(tokenizer), max_position_embeddings=512, bos_token_id=tokenizer.bos_token_id,
                  eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **widths)
    if arch == "gemma3":
        from transformers import Gemma3TextConfig

        cfg = Gemma3TextConfig(num_hidden_layers=4, head_dim=head_dim, sliding_window=16,
                               layer_types=["sliding_attention", "full_attention"] * 2,
                               final_logit_softcapping=30.0, **common)
    else:
        from transformers import LlamaConfig

        cfg = LlamaConfig(num_hidden_layers=2, **common)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    return model.to(torch.float32)
