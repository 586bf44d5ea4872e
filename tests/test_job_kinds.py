"""A job's mode and origin are enums: read back typed, refused when unknown, spelled once."""

from __future__ import annotations

import ast
from datetime import UTC, datetime

import pytest
from memvault.base.errors import InputError
from memvault.home.migrations import open_home_db
from memvault.jobs.kinds import JobMode, JobOrigin
from memvault.jobs.records import create_job, get_job, open_jobs
from test_architecture import source_files

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def test_a_stored_job_reads_back_with_its_mode_and_origin_typed(tmp_path) -> None:
    conn = open_home_db(tmp_path / "memory.db")
    with conn:
        made = create_job(conn, "organize", "explicit", NOW)
    job = get_job(conn, made.id)
    assert job.mode is JobMode.ORGANIZE and job.origin is JobOrigin.EXPLICIT
    assert [j.id for j in open_jobs(conn, JobMode.ORGANIZE, JobOrigin.EXPLICIT)] == [made.id]
    assert open_jobs(conn, JobMode.DEEP) == []


@pytest.mark.parametrize(("mode", "origin", "named"), [
    ("summarize", "explicit", "mode must be one of compact, organize, deep"),
    ("deep", "weekly", "origin must be one of threshold, explicit, hourly, nightly"),
])
def test_an_unknown_mode_or_origin_is_refused_before_anything_is_queued(
        tmp_path, mode: str, origin: str, named: str) -> None:
    conn = open_home_db(tmp_path / "memory.db")
    with pytest.raises(InputError, match=named), conn:
        create_job(conn, mode, origin, NOW)
    assert open_jobs(conn) == []


def test_the_jobs_package_spells_a_mode_name_only_in_its_enum() -> None:
    names = {m.value for m in JobMode}
    spelled = []
    for module, path in source_files().items():
        if not module.startswith("memvault.jobs.") or module == "memvault.jobs.kinds":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                spelled.append(f"{module}:{node.lineno} {node.value!r}")
    assert spelled == []
