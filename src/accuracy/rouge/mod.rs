//! ROUGE as the Python `rouge_score` package computes it.
