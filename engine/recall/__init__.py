"""Synchronous lexical recall for the agent: the FTS5 index, ranking, and the
memory_find / memory_read / memory_evidence queries."""
