"""The agent-facing service: the MCP tools and the long-running process that serves them
beside the worker."""
