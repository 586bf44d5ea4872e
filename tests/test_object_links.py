"""An object's cited slices come in the order their events were said (not by event id), the
slices of one event by their place in it, only from events the reader's spaces see; one object
read alone and a chunk of objects read at once give the same rows."""

from __future__ import annotations

import pytest
from helpers import add_evidence
from memvault.base.spaces import EVERY_SPACE, Spaces
from memvault.objects.links import cited_slices, cited_slices_of, cited_sources, slice_texts
from memvault.store.connection import write
from vault_support import open_memory, put_object, tick

pytestmark = pytest.mark.timeout(60)


def test_slices_come_oldest_said_first_and_by_place_within_an_event(tmp_path) -> None:
    with open_memory(tmp_path / "home") as mem:
        # appended newest first: ids run against the order the events were said
        late = mem.append_event("said on the fifth", occurred_at="2026-10-05T09:00:00Z")
        early = mem.append_event("said on the first", occurred_at="2026-10-01T09:00:00Z")
        hidden = mem.append_event("said in the work space", occurred_at="2026-09-01T09:00:00Z")
        mem.move_space(hidden, "work")
        put_object(mem, "knowledge:a", "A")
        put_object(mem, "knowledge:b", "B")
        with write(mem.conn):
            for event, start in ((late, 8), (late, 0), (early, 5), (early, 0), (hidden, 0)):
                add_evidence(mem.conn, "knowledge:a", event, start, start + 4, tick(mem))
            add_evidence(mem.conn, "knowledge:b", late, 0, 4, tick(mem))
        seen = [(s.event_id, s.start_char) for s in
                cited_slices(mem.conn, "knowledge:a", spaces=EVERY_SPACE)]
        assert seen == [(hidden, 0), (early, 0), (early, 5), (late, 0), (late, 8)]
        shared = [(s.event_id, s.start_char) for s in
                  cited_slices(mem.conn, "knowledge:a", spaces=Spaces.of("shared"))]
        assert shared == [(early, 0), (early, 5), (late, 0), (late, 8)]
        page = cited_slices(mem.conn, "knowledge:a", limit=2, offset=1, spaces=EVERY_SPACE)
        assert [(s.event_id, s.start_char) for s in page] == seen[1:3]
        assert slice_texts(mem.conn, page, EVERY_SPACE) == ["said", "on t"]
        work = cited_slices(mem.conn, "knowledge:a", limit=1, spaces=EVERY_SPACE)
        assert slice_texts(mem.conn, work, Spaces.of("shared")) == [None]  # another space's
        assert slice_texts(mem.conn, work, Spaces.of("work")) == ["said"]

        chunk = cited_slices_of(mem.conn, ["knowledge:b", "knowledge:a", "knowledge:x"],
                                EVERY_SPACE)
        assert set(chunk) == {"knowledge:a", "knowledge:b"}
        assert chunk["knowledge:a"] == cited_slices(mem.conn, "knowledge:a", spaces=EVERY_SPACE)
        slices, texts = cited_sources(mem.conn, ["knowledge:a"], Spaces.of("shared"))
        assert slices["knowledge:a"] == cited_slices(mem.conn, "knowledge:a",
                                                     spaces=Spaces.of("shared"))
        assert texts == {early: "said on the first", late: "said on the fifth"}
