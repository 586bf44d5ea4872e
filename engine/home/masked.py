"""What leaves a home for an agent over MCP: refusals masked like answers.

Every read of `Memory` masks secret-looking values unless its caller asks to reveal
(memvault.home.reveals), and the MCP server never asks: its answers arrive masked. A refusal is
not a read: its message may quote what the caller asked for (a key, a query), so the server
masks it here before it leaves.
"""

from __future__ import annotations

from ..secrets.detector import mask_secrets


def mask_message(message: str) -> str:
    """A refusal's message masked: it may quote what was asked for (a key, a query)."""
    return mask_secrets(message)
