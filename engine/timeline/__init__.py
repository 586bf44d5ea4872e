"""Events in, hot timeline out: raw events and their fragments (kept forever), ingestion,
and the hot timeline the agent sees (nodes and summary heads that expand back to raw text)."""
