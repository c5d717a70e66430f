"""Offline data: the transition record, behaviour-policy collection, the dataset store, samplers.

Kept light on purpose (networks import the transition record from here): import
`components.data.protocols` / `components.data.relabel` to register the collection protocols.
"""
