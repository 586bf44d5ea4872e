"""Project approval: the only way a candidate project becomes active.

A new project is always created `candidate`; the agent activates it after asking its user.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import NotRequired, TypedDict

from ..base.errors import InputError, NotFound
from ..base.spaces import Spaces
from ..store.connection import bump_revision, write
from .ids import ObjectStatus, resolve_object_ref
from .records import get_object, resolve_redirect, save_object


class ProjectApproval(TypedDict):
    """What approving a project did (memory_project_approve's answer)."""

    id: str
    status: str  # active
    changed: bool  # False: it was active already
    revision: NotRequired[int]  # the graph revision the activation made (when changed)


def approve_project(conn: sqlite3.Connection, project_id: str, now: datetime,
                    spaces: Spaces) -> ProjectApproval:
    """Activate a candidate project (one transaction, bumps the graph revision). A project of
    a space `spaces` does not see is not found, as one that does not exist."""
    with write(conn):
        resolved = resolve_object_ref(conn, project_id, spaces)
        target = resolve_redirect(conn, resolved)
        obj = get_object(conn, target)
        if not spaces.sees(obj.space):
            raise NotFound(f"no object {project_id}")
        project_id = resolved
        if obj.type != "project":
            raise InputError(f"{project_id} is a {obj.type}, not a project")
        if obj.status == ObjectStatus.ACTIVE:
            return ProjectApproval(id=obj.id, status=ObjectStatus.ACTIVE, changed=False)
        if obj.status != ObjectStatus.CANDIDATE:
            raise InputError(f"{obj.id} is {obj.status}; only a candidate project is approved")
        obj.status = ObjectStatus.ACTIVE
        save_object(conn, obj, now)
        revision = bump_revision(conn)
    return ProjectApproval(id=obj.id, status=ObjectStatus.ACTIVE, changed=True,
                           revision=revision)
