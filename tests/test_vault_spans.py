"""Each source link in an object file shows its cited span, read from the event at render time:
secrets masked, one line, at most 200 chars, Markdown that cannot break the file; and an event
whose text changed (`forget`) has every file that showed it rendered again."""

from __future__ import annotations

import re

import pytest
from helpers import add_evidence
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from memvault import NewEvent
from memvault.secrets.detector import scan_secrets
from memvault.store.connection import write
from memvault.vault import quotes
from memvault.vault.paths import object_path, page_path
from memvault.vault.projector import ProjectionBusy, rerender_objects_citing, vault_lock
from memvault.vault.quotes import QUOTE_MAX_CHARS, EventQuotes, quote_span, scan_window
from vault_support import broken_links, open_memory, project, put_object, tick

GITHUB_TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def mem(tmp_path):
    with open_memory(tmp_path / "home") as memory:
        yield memory


def quote(text: str, start: int = 0, end: int | None = None) -> str:
    return quote_span(text, start, len(text) if end is None else end, scan_secrets(text))


def shown_text(quoted: str) -> str:
    """What a reader sees of a quote: the Markdown rendered, tags stripped."""
    html = MarkdownIt("commonmark").render(f"> {quoted}\n")
    return re.sub(r"<[^>]+>", "", html).strip()


def cite(mem, object_id: str, text: str, start: int = 0, end: int | None = None) -> int:
    """Append an event and cite [start, end) of it for `object_id`; the event's id."""
    event = mem.append_event(text, occurred_at=tick(mem).isoformat())
    with write(mem.conn):
        add_evidence(mem.conn, object_id, event, start, len(text) if end is None else end,
                     tick(mem))
    return event


def file_text(mem, rel_path: str) -> str:
    return (mem.config.vault_path / rel_path).read_text(encoding="utf-8")


# -- the quote ------------------------------------------------------------------------------
def test_a_short_span_is_quoted_whole_on_one_line() -> None:
    text = "We met on Monday.\n\nTom Becker  owns\tthe runner fleet."
    assert quote(text, 19) == "“Tom Becker owns the runner fleet.”"


def test_a_long_span_is_cut_with_an_ellipsis_and_says_how_long_it_was() -> None:
    text = "word " * 100  # 500 chars
    shown = quote(text)
    body = shown[1:shown.index("”")]
    assert len(body) <= QUOTE_MAX_CHARS and body.endswith("…")
    assert shown.endswith("(cut; the span is 500 chars)")


def test_a_secret_inside_the_span_is_masked() -> None:
    text = f"the CI token is {GITHUB_TOKEN} for now"
    shown = quote(text)
    assert GITHUB_TOKEN[4:12] not in shown and "\\[secret: " in shown


def test_a_secret_the_span_boundary_cuts_in_half_is_still_masked() -> None:
    text = f"the CI key {GITHUB_TOKEN} for now"
    middle = text.index(GITHUB_TOKEN) + 20
    for start, end in ((middle, len(text)), (0, middle)):
        shown = quote(text, start, end)
        assert "secret: " in shown
        assert not any(GITHUB_TOKEN[i:i + 6] in shown for i in range(len(GITHUB_TOKEN) - 5))


def test_a_secret_named_by_a_cue_word_outside_the_span_is_masked() -> None:
    text = "the wifi password: hunter2xyz and more"
    start = text.index("hunter2xyz")
    shown = quote(text, start, start + len("hunter2xyz"))
    assert "hunter2" not in shown and "secret: " in shown


def test_the_cut_never_splits_a_secret_marker() -> None:
    text = "x" * 190 + f" key {GITHUB_TOKEN} and more text after it"
    shown = quote(text)
    assert "secret" not in shown  # the marker did not fit whole: left out, not half shown
    assert GITHUB_TOKEN[:8] not in shown and "…" in shown


def test_markdown_in_a_span_is_shown_as_typed_not_interpreted() -> None:
    text = ("---\n# Heading [[person:evil|Evil]] ![[img.png]] <script>x</script> *b* _i_ "
            "`code` #tag ==hl== %%c%% $m$ a|b ~~s~~ &amp; ^block")
    shown = quote(text)
    html = MarkdownIt("commonmark").render(f"> {shown}\n")
    assert "<script>" not in html and "<em>" not in html and "<code>" not in html
    assert "<h1>" not in html and "<hr" not in html and "[[" not in shown
    assert shown_text(shown).startswith("“--- # Heading [[person:evil|Evil]]")


def test_ordinary_punctuation_is_left_as_typed() -> None:
    assert quote("a = b, 50% off, ~/notes, Tom & Jerry -> done!") == (
        "“a = b, 50% off, ~/notes, Tom & Jerry -> done!”")


def test_bidi_and_control_characters_are_shown_by_code_point() -> None:
    shown = quote("abc\u202edef\x00ghi")
    assert shown == "“abc⟨U+202E⟩def⟨U+0000⟩ghi”"


def test_a_span_outside_the_event_text_says_so() -> None:
    assert "outside" in quote_span("short", 10, 20, [])
    assert quote_span("short", 2, 99, []) == "“ort”"  # clamped to the text


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=400), st.data())
def test_any_span_renders_as_one_quote_paragraph_of_at_most_the_limit(text, data) -> None:
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    shown = quote(text, start, end)
    assert "\n" not in shown and "\r" not in shown
    shown.encode("utf-8")  # no lone surrogate
    tokens = MarkdownIt("commonmark").parse(f"- item\n  > {shown}\n")
    kinds = [t.type for t in tokens]
    assert kinds.count("paragraph_open") == 2  # the item's and the quote's: nothing else
    assert "html_block" not in kinds and "heading_open" not in kinds
    if not shown.startswith("“"):  # a span of whitespace only: a fixed note says so
        assert shown == "_(only whitespace)_"
        return
    inline = [child.type for t in tokens if t.children for child in t.children]
    assert set(inline) <= {"text", "softbreak"}  # no link, emphasis, code, HTML or entity
    visible = shown_text(shown)
    body = visible[visible.index("“") + 1:visible.rindex("”")]
    assert len(body) <= QUOTE_MAX_CHARS


def test_the_scan_window_never_cuts_a_word() -> None:
    text = "alpha beta " + "x" * 50 + " gamma delta"
    lo, hi = scan_window(text, 30, 32, margin=5)
    assert (lo, hi) == (11, 61)  # the run of x, whole
    assert scan_window("a b", 0, 1, margin=1_000) == (0, 3)


def test_a_span_of_a_long_event_scans_its_surroundings_not_the_whole_event(monkeypatch) -> None:
    filler = "lorem ipsum dolor sit amet " * 1_000  # 27,000 chars
    text = filler + f"the CI key {GITHUB_TOKEN} and the wifi password: hunter2xyz. " + filler
    scanned: list[int] = []
    real = quotes.scan_secrets
    monkeypatch.setattr(quotes, "scan_secrets", lambda t: scanned.append(len(t)) or real(t))
    key_middle = text.index(GITHUB_TOKEN) + 20
    value = text.index("hunter2xyz")
    shown = EventQuotes({1: text}).quote(1, key_middle, value + len("hunter2xyz"))
    assert GITHUB_TOKEN[20:26] not in shown and "hunter2" not in shown
    assert shown.count("secret: ") == 2
    assert scanned and max(scanned) < 3 * quotes.SCAN_MARGIN


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab  \n\t[#*_<&=%~|你\u202e")), min_size=1,
               max_size=1_500), st.data())
def test_reading_a_prefix_of_a_long_span_shows_what_the_whole_span_would(text, data) -> None:
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    probe = data.draw(st.integers(1, 400))
    assert EventQuotes({1: text}, probe).quote(1, start, end) == quote(text, start, end)


def test_a_prefix_just_short_of_or_past_the_limit_shows_what_the_whole_span_would() -> None:
    for text in ("word " * 100, "你好 " * 150, "a" * 199 + " " * 50 + "b" * 10):
        for probe in range(150, 260):
            assert EventQuotes({1: text}, probe).quote(1, 0, len(text)) == quote(text), probe


def test_a_whole_span_of_a_long_event_scans_only_what_it_shows(monkeypatch) -> None:
    text = ("lorem ipsum dolor sit amet " * 1_200)[:32_000]
    scanned: list[int] = []
    real = quotes.scan_secrets
    monkeypatch.setattr(quotes, "scan_secrets", lambda t: scanned.append(len(t)) or real(t))
    shown = EventQuotes({1: text}).quote(1, 0, len(text))
    assert shown.endswith("(cut; the span is 32,000 chars)")
    assert sum(scanned) < 2_000


# -- in the vault ---------------------------------------------------------------------------
def test_each_source_link_shows_its_span_under_it(mem) -> None:
    put_object(mem, "person:tom", "Tom Becker")
    cite(mem, "person:tom", "Standup notes. Tom Becker is our DevOps lead.", 15)
    project(mem)
    text = file_text(mem, object_path("person:tom"))
    assert "· chars 15–45\n  > “Tom Becker is our DevOps lead.”\n" in text
    assert broken_links(mem.config.vault_path) == []


def test_continuation_pages_show_spans_too(mem) -> None:
    put_object(mem, "person:tom", "Tom Becker")
    for i in range(5):
        cite(mem, "person:tom", f"Fact number {i} about Tom.")
    project(mem, max_links=2)
    pages = [file_text(mem, page_path("person:tom", n)) for n in (2, 3)]
    assert "> “Fact number 2 about Tom.”" in pages[0]
    assert "> “Fact number 4 about Tom.”" in pages[1]


def test_no_vault_file_holds_a_cited_secret(mem) -> None:
    put_object(mem, "credential:ci", "CI token")
    cite(mem, "credential:ci", f"the CI token is {GITHUB_TOKEN}, Tom rotates it")
    project(mem)
    for path in mem.config.vault_path.rglob("*"):
        if path.is_file():
            assert GITHUB_TOKEN[4:] not in path.read_text(encoding="utf-8"), path


def test_the_batched_render_reads_event_texts_once_a_chunk(mem) -> None:
    n = 120
    events = mem.append_events([NewEvent(f"event {i} text", tick(mem).isoformat())
                                for i in range(n)])
    for i in range(n):
        put_object(mem, f"task:t{i:03d}", f"Task {i}")
    with write(mem.conn):
        for i, event in enumerate(events):
            add_evidence(mem.conn, f"task:t{i:03d}", event, 0, 5, tick(mem))
    seen: list[str] = []
    mem.conn.set_trace_callback(
        lambda sql: seen.append(sql) if sql.startswith("SELECT e.id, e.text FROM") else None)
    try:
        result = project(mem)
    finally:
        mem.conn.set_trace_callback(None)
    assert result.objects >= n and not result.errors
    assert len(seen) == 2, seen  # one read of the cited texts a chunk of 100, not one an object
    assert "> “event”" in file_text(mem, object_path("task:t000"))


# -- forget: the text of an event changes ----------------------------------------------------
def redact_event(mem, event_id: int, old: str) -> None:
    """What `memvault forget` does to an event (built elsewhere): `old` replaced in place by a
    marker of the same length. Events are otherwise immutable, so the test lifts the guard."""
    with write(mem.conn):
        mem.conn.execute("DROP TRIGGER events_no_update")
        text = mem.conn.execute("SELECT text FROM events WHERE id = ?", (event_id,)).fetchone()[0]
        mem.conn.execute("UPDATE events SET text = ? WHERE id = ?",
                         (text.replace(old, "▒" * len(old)), event_id))


def test_rerendering_the_objects_citing_an_event_shows_its_new_text(mem) -> None:
    put_object(mem, "person:tom", "Tom Becker")
    put_object(mem, "person:ann", "Ann")
    event = cite(mem, "person:tom", "Tom lives at 12 Elm Street.")
    cite(mem, "person:ann", "Ann likes tea.")
    project(mem)
    ann = mem.config.vault_path / object_path("person:ann")
    ann_mtime = ann.stat().st_mtime_ns
    redact_event(mem, event, "12 Elm Street")
    result = rerender_objects_citing(mem.conn, mem.config.vault_path, [event],
                                     config=mem.config, now=mem.clock.now())
    assert result.written == [object_path("person:tom")]
    text = file_text(mem, object_path("person:tom"))
    assert "Elm" not in text and "“Tom lives at ▒▒▒▒▒▒▒▒▒▒▒▒▒.”" in text
    assert ann.stat().st_mtime_ns == ann_mtime  # a file that did not show it is not rewritten


def test_a_busy_vault_keeps_the_marks_so_the_next_projection_rerenders(mem) -> None:
    put_object(mem, "person:tom", "Tom Becker")
    event = cite(mem, "person:tom", "Tom lives at 12 Elm Street.")
    project(mem)
    redact_event(mem, event, "12 Elm Street")
    with vault_lock(mem.config.vault_path), pytest.raises(ProjectionBusy):
        rerender_objects_citing(mem.conn, mem.config.vault_path, [event], config=mem.config)
    project(mem)
    assert "Elm" not in file_text(mem, object_path("person:tom"))


def test_rerendering_events_no_file_shows_creates_no_vault(mem) -> None:
    put_object(mem, "person:tom", "Tom Becker")
    event = cite(mem, "person:tom", "Tom lives at 12 Elm Street.")
    result = rerender_objects_citing(mem.conn, mem.config.vault_path, [event, 999_999],
                                     config=mem.config)
    assert result.written == [] and not mem.config.vault_path.exists()


def test_event_ids_that_are_not_integers_are_refused_before_anything_is_marked(mem) -> None:
    put_object(mem, "person:tom", "Tom Becker")
    event = cite(mem, "person:tom", "Tom lives at 12 Elm Street.")
    project(mem)
    for bad in (["1"], [1.5], [True], [event, None]):
        with pytest.raises(ValueError, match="event ids must be integers"):
            rerender_objects_citing(mem.conn, mem.config.vault_path, bad, config=mem.config)
    assert mem.conn.execute("SELECT COUNT(*) FROM vault_dirty").fetchone()[0] == 0
