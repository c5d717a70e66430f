"""Trainers (kind `algorithm`) that compose data, encoders, objectives and RL parts into runs."""
