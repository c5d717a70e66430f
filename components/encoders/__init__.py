"""Context encoders (kind `context_encoder`) built from per-transition encoders (kind
`transition_encoder`), tokenizers (kind `tokenizer`) and batch attention (kind `attention`);
their parallel composition and the EMA copy.

A context encoder maps context transitions [T, B, F] to an `Encoded` record: per-transition
embeddings [T, B, Z], batch weights [T, B] (non-negative, mean 1) and the task vector [T, Z].
"""
