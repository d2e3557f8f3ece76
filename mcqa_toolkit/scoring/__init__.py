"""Scoring methods on rendered prompts through a Backend: first-token letters, option log-likelihoods
(sum/token/char/byte/pmi, also cloze), generation + answer extraction, and Min-K% prob of questions.
Each takes a Backend and Prompts and returns per-option numbers (`Scored`, in original option order)."""
