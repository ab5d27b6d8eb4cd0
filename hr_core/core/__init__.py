"""The lowest layer: the vocabulary every part shares (errors, failure kinds, identity
fingerprints) and small helpers for text, safety, JSON text, processes and argument checks.
Imports nothing else of hr_core.
"""
