"""Prompts delivered exactly once: the outbox (persisted before the first byte, reconciled after an
ambiguous cut) and its narrow port to one profile's gateway.
"""
