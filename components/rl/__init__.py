"""Reinforcement-learning parts: networks, behaviour SAC, and (later) BRAC, BCQ, PEARL pieces."""
