"""Foundations every layer may use: the injectable clock, the error types, the token estimator
and the validated configuration. Imports nothing else of memvault."""
