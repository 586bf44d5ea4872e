"""Dates in text, read in one place: reader.py (see its docstring)."""
