"""What leaves a home for an agent: every answer with its secret-looking values masked.

The MCP server (memvault.service.mcp_server) sends every tool's answer through `mask_answer`,
whatever the tool, so a tool added later cannot forget to mask, and nothing is revealed there
(`--reveal-secrets` exists on the command line only). The masking itself is recall's
(memvault.recall.masking): a page or a hot fragment cut from a longer text is masked by the
secrets of the whole text before it gets here (recall's pages, `agent_context`), and masking
masked text again changes nothing.
"""

from __future__ import annotations

from typing import Any

from ..recall.masking import mask_fragments, mask_tree
from ..secrets.detector import mask_secrets
from .memory import Memory, ResidentContext


def mask_answer(data: Any) -> Any:
    """A copy of an answer (dicts, lists, strings) with every string masked; ids and engine
    labels stay as they are (recall.masking.mask_tree)."""
    return mask_tree(data)


def mask_message(message: str) -> str:
    """A refusal's message masked: it may quote what was asked for (a key, a query)."""
    return mask_secrets(message)


def agent_context(memory: Memory) -> ResidentContext:
    """memory_context's answer: the resident context with each hot fragment of a longer event
    masked by the secrets of its whole event (a key cut by a fragment's end is masked on both
    sides); `mask_answer` masks the rest."""
    context = memory.resident_context()
    context["timeline"]["nodes"] = mask_fragments(memory.conn, context["timeline"]["nodes"])
    return context
