"""Offline data: behaviour-policy collection, the dataset store, samplers (the transition record
they share is `components/transitions.py`).

Kept light on purpose: import
`components.data.protocols` / `components.data.relabel` to register the collection protocols.
"""
