"""Scoring methods on rendered prompts through a Backend: first-token letters, option log-likelihoods
(sum/token/char/byte/pmi, also cloze), generation + answer extraction (extract: one letter; responses: letter
sets, true/false lists, text, JSON replies; typed: the other question types and their yes/no path), the LLM
judge of short answers (judge), the final answer after a chain of thought (reasoning), and Min-K% prob of
questions (min_k); methods.py is the one table of methods (what each needs, shows, costs, and its scorer). Each takes a
Backend and Prompts and returns per-option numbers (`Scored`, in original option order); the exam rule that grades a
response is records.grading."""
