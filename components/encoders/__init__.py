"""Context encoders: per-transition encoders (kind `encoder`), tokenizers (kind `tokenizer`),
batch aggregation / attention (kind `attention`), their parallel composition and the EMA copy.

A context encoder maps context transitions [T, B, F] to an `Encoded` record: per-transition
embeddings [T, B, Z], batch weights [T, B] (non-negative, mean 1) and the task vector [T, Z].
"""
