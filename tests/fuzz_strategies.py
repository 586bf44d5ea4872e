"""Hypothesis strategies for malformed proposals of compact, organize and deep.

A `Scene` describes one claimed batch in a real store: its mode, a VALID proposal for it (`base`)
and the store facts the mutations need (ids inside and outside the batch, the page read, which
objects the batch has read...). A `Case` is what the model would send: the base, maybe decorated
with awkward but valid Unicode, then mutations from `CATALOGUE`. Each mutation makes the proposal
invalid BY CONSTRUCTION, whatever was applied before it: it sets every piece of state its
invalidity depends on, adds its own invalid element rather than editing another's, and names
absent objects only by `ghost-` ids that nothing writes. Each is labelled with why it is invalid
and the field a correction for it names (checked by a test). The proposal is encoded as the raw
tool-call arguments text, sometimes broken at the text level too (`_raw_junk`), and paired with a
commit context: as claimed, stale revision, lost lease, or a receipt token already committed.

`arbitrary_cases` feeds completely arbitrary JSON (a recursive strategy) as the arguments.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any, TypeVar

from hypothesis import strategies as st
from memvault.timeline.fragments import find_lone_surrogate

T = TypeVar("T")
DrawFn = Callable[[st.SearchStrategy[Any]], Any]
Proposal = dict[str, Any]
GRAPH = frozenset({"organize", "deep"})
COMPACT = frozenset({"compact"})
ALL = frozenset({"compact", "organize", "deep"})
CONTEXTS = ("claimed", "stale_revision", "lease_lost", "replayed_token")

# -- the scene -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scene:
    """One claimed batch, as the mutations see it (ids are those of the prepared store)."""

    name: str
    mode: str  # compact | organize | deep
    base: Proposal  # a proposal the engine accepts for this batch
    claimed_nodes: tuple[int, ...] = ()  # compact: the batch's nodes
    foreign_nodes: tuple[int, ...] = ()  # compact: existing nodes outside the batch
    claimed_chars: int = 0  # compact: chars of the batch's nodes
    claimed_tokens: int = 0  # compact: estimated tokens of the batch's nodes
    event_id: int = 0  # organize: the claimed event
    page: tuple[int, int] = (0, 0)  # organize: chars [start, end) the batch read
    event_chars: int = 0  # organize: length of the claimed event
    has_targets: bool = False  # organize: the event already has object targets
    other_events: tuple[int, ...] = ()  # existing events other than the claimed one
    read_ids: tuple[str, ...] = ()  # existing objects the batch has read (may rewrite)
    unread_ids: tuple[str, ...] = ()  # existing live objects the batch has not read
    merged: tuple[tuple[str, str], ...] = ()  # (merged-away id, its survivor)
    candidate_projects: tuple[str, ...] = ()  # read projects still `candidate`
    reviewed: tuple[str, ...] = ()  # deep: the ids of this batch's slice
    outside_slice: tuple[str, ...] = ()  # deep: snapshot ids not in this slice

    @property
    def last_page(self) -> bool:
        return self.page[1] >= self.event_chars


@dataclass(frozen=True)
class Case:
    """A malformed tool call: raw arguments text, the context it is committed in, and what the
    engine may answer (`correction` = FieldError, `malformed` = BatchFailed, `refused` =
    CommitRefused, `replayed` = the original receipt of the token)."""

    scene: Scene
    context: str
    labels: tuple[str, ...]
    raw: str
    allowed: frozenset[str] = field(default_factory=frozenset)

    def __repr__(self) -> str:  # what a failure report shows: raw text may be ~1 MB
        raw = self.raw if len(self.raw) <= 3_000 else (
            f"{self.raw[:3_000]}... ({len(self.raw):,} chars)")
        return (f"Case(scene={self.scene.name!r}, context={self.context!r}, "
                f"labels={self.labels!r}, allowed={sorted(self.allowed)}, raw={raw!r})")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis' reports
        printer.text(repr(self))


# -- building blocks -----------------------------------------------------------------------------

SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff", "\ud83d")
# Control, format and separator chars: never allowed in an object id's slug.
BAD_ID_CHARS = ("\x00", "\x07", "\x1b", "\x7f", "\x85", "\u200b", "\u200c", "\u200d", "\u200e",
                "\u200f", "\u202a", "\u202e", "\u2066", "\ufeff", "\u00ad", "\U000e0001",
                "\u2028", "\u00a0", "\u3000", "\t", "\n", " ")
# Valid but awkward text: RTL marks, combining chars, 4-byte emoji, ZWJ sequences, CJK, BOM.
NOISE = ("\u200f", "\u202e", "\u0301", "e\u0308\u0301", "\U0001f600", "\U0001f468\u200d"
         "\U0001f469\u200d\U0001f467", "\u200d", "\ufeff", "\U00020b9f", "\ufdfa",
         "\u05d0\u05d1", "\u0627\u0644", "\x7f", "\u2028")
OVERSIZE_UNITS = ("x", "\u00e9", "e\u0301", "\U0001f600", "\u4e2d", "\u200d", "\x00", " ")
PATH_IDS = ("../x", "person:../../etc", "person:a/b", "person:a\\b", "/etc/passwd",
            "person:/abs", "person:.hidden", "person:a..b", "person:..", "person:~/.ssh",
            "person:C:\\x", "knowledge:a#b", "task:a?b", "person:a%2Fb", "person:a|b",
            "person:<x>", "person:a*b", "person:`x`", "person:{x}", "person:[x]")
BAD_TYPE_IDS = ("people:x", "Person:x", "PERSON:x", "organization:x", "todos:x", "p\u0435rson:x",
                "\uff50erson:x", ":x", "x", "person", "person:", " person:x", "event:1",
                "credential-x", "person::x", "person:" + "a" * 121, "", "ab")
LABEL_TYPOS = ("member-of", "Member_of", "memberof", "MEMBER_OF", "member_of ", " member_of",
               "member of", "member_of\u200b", "member\u200dof", "membre_of", "related",
               "relates_to", "depends-on", "knows\u0301", "\uff4dember_of", "", "supersede",
               "is a member of the Atlas project team and reports to the lead every week")
OUTCOME_TYPOS = ("Linked", "link", "archive-only", "archive_only ", "ARCHIVE_ONLY", "continued",
                 "done", "skip", "", "linked\u200b", "continue\x00", "blocked", "pending")
CORE_TYPOS = ("agents.md", "AGENTS", "SOUL.MD", "USER.md ", "../AGENTS.md", "NOTES.md",
              "AGENTS.md\x00", "/etc/passwd", "memvault.toml")
STATUS_TYPOS = ("Active", "done", "todo", "deleted", "", "ACTIVE", "active ")
SECRETS = ("password: hunter2hunter2", "api_key = sk-" + "A1b2" * 6, "ghp_" + "a1" * 16,
           "key AKIAABCDEFGHIJKLMNOP here", "-----BEGIN RSA PRIVATE KEY-----",
           "Authorization: Bearer " + "abc123" * 4, "\u5bc6\u7801: abc12345xyz")
BLANKS = (None, "", " ", "\n\t ", "\u3000", "\u00a0\u2028")
JUNK_LIST = ("junk", None, {"a": 1}, 3, 2.5, True, [[1]], ["string"], [None], [3],
             {"$ne": None}, [{"nested": [{"deeper": [None]}]}])
JUNK_STR = (None, 5, 2.5, False, ["a"], {"text": "a"}, [], {})
JUNK_TEXTS = tuple(j for j in JUNK_LIST if j != ["string"])  # not a list of strings
BAD_INTS = (0, -1, 10**6, 2**63, -(2**63) - 1, 10**30, 2.5, "abc", None, [1], {"id": 1}, "")

# Hypothesis draws cost more than the check itself (~0.3 ms each on a busy machine): a case
# draws only its number of mutations (so a failure shrinks to the fewest) and a seed from
# Hypothesis, and everything else from a `Random` with that seed.
_FLIP = st.booleans()
_SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@functools.cache
def _between(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(min_value=lo, max_value=hi)


def between(rnd: Random, lo: int, hi: int) -> int:
    return rnd.randint(lo, hi)


def flip(rnd: Random) -> bool:
    return rnd.random() < 0.5


def choose(rnd: Random, options: Sequence[T]) -> T:
    return options[rnd.randrange(len(options))]


def junk(rnd: Random, options: Sequence[Any]) -> Any:
    """One of `options`, copied: later mutations may append to what an earlier one drew."""
    return copy.deepcopy(choose(rnd, options))


def shuffled(rnd: Random, options: Sequence[T]) -> list[T]:
    return rnd.sample(list(options), len(options))


def some(rnd: Random, options: Sequence[T], fewest: int, most: int) -> list[T]:
    """`fewest` to `most` of `options`, repeats allowed."""
    return [choose(rnd, options) for _ in range(between(rnd, fewest, most))]


def oversize(rnd: Random, limit: int) -> str:
    """Text just past (or well past) `limit` chars, in one of a few kinds of char."""
    return choose(rnd, OVERSIZE_UNITS) * (limit + choose(rnd, (1, 2, 37)))


def items(p: Proposal, key: str) -> list[Any]:
    """p[key] as a list, replacing whatever junk an earlier mutation left there."""
    if not isinstance(p.get(key), list):
        p[key] = []
    return p[key]


def insert(rnd: Random, text: str, extra: str) -> str:
    at = between(rnd, 0, len(text))
    return text[:at] + extra + text[at:]


def new_object(rnd: Random, stem: str, **fields: Any) -> dict[str, Any]:
    """A valid new object write (ids never clash with the store: stems are fuzz-only)."""
    return {"id": f"knowledge:{stem}-{between(rnd, 0, 999)}", "name": f"Fuzz {stem}", **fields}


def ghost_id(rnd: Random) -> str:
    """An id that names no object: no mutation ever writes a `ghost-` id."""
    kind = choose(rnd, ("person", "knowledge", "project", "task"))
    return f"{kind}:ghost-{between(rnd, 0, 999)}"


def two_read(rnd: Random, scene: Scene) -> tuple[str, str]:
    a, b = shuffled(rnd, scene.read_ids)[:2]
    return a, b


def set_disposition(p: Proposal, scene: Scene, outcome: str, **extra: Any) -> None:
    p["events"] = [{"event_id": scene.event_id, "outcome": outcome, **extra}]


def string_slots(value: Any) -> list[tuple[Any, Any]]:
    """(container, key) of every string value inside `value`, depth first."""
    slots: list[tuple[Any, Any]] = []
    pairs = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in pairs:
        if isinstance(item, str):
            slots.append((value, key))
        elif isinstance(item, dict | list):
            slots.extend(string_slots(item))
    return slots


# -- the mutation catalogue ----------------------------------------------------------------------

Mutator = Callable[[Random, Proposal, Scene], None]


@dataclass(frozen=True)
class Mutation:
    label: str
    why: str  # why the result is invalid, whatever came before
    modes: frozenset[str]
    apply: Mutator
    when: Callable[[Scene], bool]
    field: tuple[str, ...]  # a correction for it alone names a field starting with one of these


CATALOGUE: list[Mutation] = []


def mutation(label: str, field: str, why: str, modes: frozenset[str] = GRAPH,
             when: Callable[[Scene], bool] = lambda scene: True) -> Callable[[Mutator], Mutator]:
    """Register a mutator in CATALOGUE: `field` is where a correction for it alone points
    ("a|b": the field path starts with a or b; "": anywhere)."""

    def register(fn: Mutator) -> Mutator:
        CATALOGUE.append(Mutation(label, why, modes, fn, when, tuple(field.split("|"))))
        return fn

    return register


def catalogue_for(scene: Scene) -> list[Mutation]:
    return [m for m in CATALOGUE if scene.mode in m.modes and m.when(scene)]


# - anything

@mutation("lone_surrogate", "", "a lone UTF-16 surrogate is not Unicode text", ALL)
def _lone_surrogate(rnd: Random, p: Proposal, scene: Scene) -> None:
    slots = string_slots(p)
    if not slots:
        p["\ud800"] = "x"
        return
    container, key = choose(rnd, slots)
    text = insert(rnd, container[key], choose(rnd, SURROGATES))
    if find_lone_surrogate(json.loads(json.dumps(text))) is None:
        # Applied twice, a high and a low surrogate can land side by side: JSON's escapes then
        # read back as one valid character, so the model's text holds no lone surrogate. Add one
        # that stays alone.
        text += "\ud800x"
    container[key] = text


@mutation("nul_in_text", "", "a NUL character in text (events and core files refuse it too)", ALL)
def _nul_in_text(rnd: Random, p: Proposal, scene: Scene) -> None:
    slots = free_text_slots(p)
    if not slots:
        p["summary" if scene.mode == "compact" else "objects"] = "\x00"
        return
    container, key = choose(rnd, slots)
    container[key] = insert(rnd, container[key], "\x00")


@mutation("surrogate_key", "arguments", "an unknown field (named with a lone surrogate)", ALL)
def _surrogate_key(rnd: Random, p: Proposal, scene: Scene) -> None:
    p[choose(rnd, ("objects", "summary", "x")) + choose(rnd, SURROGATES)] = []


@mutation("foreign_field", "", "a field this tool does not have (extra fields are refused)", ALL)
def _foreign_field(rnd: Random, p: Proposal, scene: Scene) -> None:
    foreign = {
        "compact": ("objects", "relations", "evidence", "core_files", "events", "merges",
                    "reviewed", "nodes", "node_id", "Summary"),
        "organize": ("merges", "reviewed", "node_ids", "summary", "Objects", "event", "outcome"),
        "deep": ("evidence", "events", "node_ids", "summary", "progress", "Reviewed"),
    }[scene.mode]
    p[choose(rnd, foreign)] = choose(rnd, ([], None, "x", 1, {}))


# - compact

@mutation("node_missing", "node_ids", "a claimed node is not covered", COMPACT)
def _node_missing(rnd: Random, p: Proposal, scene: Scene) -> None:
    nodes = shuffled(rnd, scene.claimed_nodes)
    p["node_ids"] = nodes[: between(rnd, 0, len(nodes) - 1)]


@mutation("node_foreign", "node_ids", "covers an existing node outside the batch", COMPACT)
def _node_foreign(rnd: Random, p: Proposal, scene: Scene) -> None:
    p["node_ids"] = [*scene.claimed_nodes, choose(rnd, scene.foreign_nodes)]


@mutation("node_unknown", "node_ids", "covers a node id that does not exist or is no int", COMPACT)
def _node_unknown(rnd: Random, p: Proposal, scene: Scene) -> None:
    nodes = list(scene.claimed_nodes)
    nodes[between(rnd, 0, len(nodes) - 1)] = junk(rnd, BAD_INTS)
    p["node_ids"] = nodes


@mutation("node_duplicate", "node_ids", "a node listed twice is not exact coverage", COMPACT)
def _node_duplicate(rnd: Random, p: Proposal, scene: Scene) -> None:
    p["node_ids"] = [*scene.claimed_nodes, choose(rnd, scene.claimed_nodes)]


@mutation("node_ids_type", "node_ids", "node_ids is not a list of ints", COMPACT)
def _node_ids_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    p["node_ids"] = choose(rnd, (
        ",".join(map(str, scene.claimed_nodes)), None, {"9": 1}, [list(scene.claimed_nodes)],
        [n + 0.5 for n in scene.claimed_nodes], ["nine"], [], "all"))


@mutation("summary_not_shorter", "summary", "the summary is not shorter than its nodes", COMPACT)
def _summary_not_shorter(rnd: Random, p: Proposal, scene: Scene) -> None:
    extra = between(rnd, 0, 50)
    p["summary"] = choose(rnd, ("x", "\u00e9", "\U0001f600")) * (scene.claimed_chars + extra)


@mutation("summary_more_tokens", "summary", "fewer chars but more estimated tokens than its nodes",
          COMPACT)
def _summary_more_tokens(rnd: Random, p: Proposal, scene: Scene) -> None:
    size = between(rnd, scene.claimed_tokens, scene.claimed_chars - 1)
    p["summary"] = choose(rnd, ("\u4e2d", "\U0001f600", "\u00e9")) * size


@mutation("summary_blank", "summary", "a blank summary covers nothing", COMPACT)
def _summary_blank(rnd: Random, p: Proposal, scene: Scene) -> None:
    p["summary"] = choose(rnd, BLANKS)


@mutation("compact_summary_oversize", "summary", "summary past 16,000 chars", COMPACT)
def _compact_summary_oversize(rnd: Random, p: Proposal, scene: Scene) -> None:
    p["summary"] = oversize(rnd, 16_000)


@mutation("summary_type", "summary", "summary is not a string", COMPACT)
def _summary_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    p["summary"] = junk(rnd, JUNK_STR)


# - objects (organize and deep)

@mutation("object_id_path", "objects", "an object id that is a path (or holds path characters)")
def _object_id_path(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "objects").append({"id": choose(rnd, PATH_IDS), "name": "path"})


@mutation("object_id_bad_type", "objects", "an object id without a known type prefix or slug")
def _object_id_bad_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "objects").append({"id": choose(rnd, BAD_TYPE_IDS), "name": "typo"})


@mutation("object_id_invisible", "objects", "an object id holding a control, format or space char")
def _object_id_invisible(rnd: Random, p: Proposal, scene: Scene) -> None:
    slug = insert(rnd, f"fuzz-{between(rnd, 0, 999)}", choose(rnd, BAD_ID_CHARS))
    items(p, "objects").append({"id": f"person:{slug}", "name": "invisible"})


@mutation("object_field_type", "objects", "an object field of the wrong JSON type, or missing")
def _object_field_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    obj = new_object(rnd, "typed")
    key = choose(rnd, ("id", "name", "aliases", "summary", "body", "cues", "status"))
    bad = junk(rnd, JUNK_STR if key not in ("aliases", "cues") else JUNK_TEXTS)
    if key in ("summary", "body", "status") and bad is None:
        bad = 7  # None is a valid status and a missing summary/body is allowed
    obj[key] = bad
    if flip(rnd) and key in ("id", "name"):
        del obj[key]
    items(p, "objects").append(obj)


@mutation("object_extra_field", "objects", "an object field that does not exist")
def _object_extra_field(rnd: Random, p: Proposal, scene: Scene) -> None:
    key = choose(rnd, ("type", "version", "redirect_to", "sources", "Name", "relations"))
    items(p, "objects").append(new_object(rnd, "extra", **{key: "x"}))


@mutation("unread_overwrite", "objects", "overwrites an existing object the batch has not read",
          GRAPH, when=lambda s: bool(s.unread_ids))
def _unread_overwrite(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "objects").append({"id": choose(rnd, scene.unread_ids), "name": "over"})


@mutation("merged_overwrite", "objects", "writes an object that was merged away",
          GRAPH, when=lambda s: bool(s.merged))
def _merged_overwrite(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "objects").append({"id": choose(rnd, scene.merged)[0], "name": "old"})


@mutation("duplicate_object", "objects", "the same object twice in one write")
def _duplicate_object(rnd: Random, p: Proposal, scene: Scene) -> None:
    obj = new_object(rnd, "twice")
    items(p, "objects").extend([obj, {**obj, "body": "again"}])


@mutation("object_oversize", "objects",
          "summary > 400, body > 16,000, name > 200 chars, or > 32 aliases or cues")
def _object_oversize(rnd: Random, p: Proposal, scene: Scene) -> None:
    key, limit = choose(rnd, (("summary", 400), ("body", 16_000), ("name", 200),
                              ("aliases", 32), ("cues", 32)))
    if key in ("aliases", "cues"):
        value: Any = [f"entry {i}" for i in range(limit + between(rnd, 1, 5))]
    else:
        value = oversize(rnd, limit)
    items(p, "objects").append(new_object(rnd, "big", **{key: value}))


@mutation("name_empty", "objects", "an object without a name")
def _name_empty(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "objects").append(new_object(rnd, "nameless", name=""))


@mutation("too_many_objects", "objects", "more than 32 objects in one write")
def _too_many_objects(rnd: Random, p: Proposal, scene: Scene) -> None:
    extra = between(rnd, 33, 40)
    items(p, "objects").extend({"id": f"knowledge:many-{i}", "name": f"many {i}"}
                               for i in range(extra))


@mutation("proposal_oversize", "proposal",
          "a proposal of 900,000 bytes or more (each object within its limits)")
def _proposal_oversize(rnd: Random, p: Proposal, scene: Scene) -> None:
    body = choose(rnd, ("\u4e2d" * 15_000, "\U0001f600" * 12_000))  # 45,000+ bytes of UTF-8
    items(p, "objects").extend({"id": f"knowledge:bulk-{i}", "name": "bulk", "body": body}
                               for i in range(20))


@mutation("secret_value", "objects",
          "a secret value in an object (a credential keeps only where the secret lives)")
def _secret_value(rnd: Random, p: Proposal, scene: Scene) -> None:
    key = choose(rnd, ("body", "summary", "name", "cues"))
    secret = choose(rnd, SECRETS)
    obj = {"id": f"credential:fuzz-secret-{between(rnd, 0, 999)}", "name": "vault entry",
           key: [secret] if key == "cues" else secret}
    items(p, "objects").append(obj)


@mutation("new_project_not_candidate", "objects", "a new project must be created as candidate")
def _new_project_not_candidate(rnd: Random, p: Proposal, scene: Scene) -> None:
    status = choose(rnd, ("active", "archived"))
    project = f"project:fuzz-new-{between(rnd, 0, 999)}"
    items(p, "objects").append({"id": project, "name": "Project X", "status": status})


@mutation("activate_candidate", "objects", "only project approval activates a candidate project",
          GRAPH, when=lambda s: bool(s.candidate_projects))
def _activate_candidate(rnd: Random, p: Proposal, scene: Scene) -> None:
    target = choose(rnd, scene.candidate_projects)
    items(p, "objects").append({"id": target, "name": "Atlas", "status": "active"})


@mutation("status_typo", "objects", "a lifecycle status that does not exist")
def _status_typo(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "objects").append(new_object(rnd, "status", status=choose(rnd, STATUS_TYPOS)))


# - relations

@mutation("label_typo", "relations", "a relation label that is not one of the short labels")
def _label_typo(rnd: Random, p: Proposal, scene: Scene) -> None:
    src, dst = two_read(rnd, scene)
    kind = choose(rnd, ("typo", "decorated", "not text"))
    label = (choose(rnd, LABEL_TYPOS) if kind == "typo" else
             choose(rnd, ("member_of", "knows", "about")) + choose(rnd, NOISE)
             if kind == "decorated" else
             choose(rnd, (None, 1, ["member_of"], {"label": "member_of"})))
    items(p, "relations").append({"src": src, "label": label, "dst": dst})


@mutation("relation_unknown_end", "relations", "a relation to an object that does not exist")
def _relation_unknown_end(rnd: Random, p: Proposal, scene: Scene) -> None:
    ends = [choose(rnd, scene.read_ids), ghost_id(rnd)]
    if flip(rnd):
        ends.reverse()
    items(p, "relations").append({"src": ends[0], "label": "related_to", "dst": ends[1]})


@mutation("relation_bad_id", "relations", "a relation end that is not a valid id")
def _relation_bad_id(rnd: Random, p: Proposal, scene: Scene) -> None:
    bad = choose(rnd, PATH_IDS + BAD_TYPE_IDS)
    end = choose(rnd, ("src", "dst"))
    rel = {"src": scene.read_ids[0], "label": "knows", "dst": scene.read_ids[-1], end: bad}
    items(p, "relations").append(rel)


@mutation("relation_self", "relations", "a relation from an object to itself")
def _relation_self(rnd: Random, p: Proposal, scene: Scene) -> None:
    target = choose(rnd, scene.read_ids)
    items(p, "relations").append({"src": target, "label": "related_to", "dst": target})


@mutation("relation_self_via_merge", "relations",
          "a relation between a merged id and its survivor relates one object with itself",
          GRAPH, when=lambda s: bool(s.merged))
def _relation_self_via_merge(rnd: Random, p: Proposal, scene: Scene) -> None:
    ends = list(choose(rnd, scene.merged))
    if flip(rnd):
        ends.reverse()
    items(p, "relations").append({"src": ends[0], "label": "knows", "dst": ends[1]})


@mutation("too_many_relations", "relations", "more than 64 relations in one write")
def _too_many_relations(rnd: Random, p: Proposal, scene: Scene) -> None:
    src, dst = two_read(rnd, scene)
    rel = {"src": src, "label": "related_to", "dst": dst}
    items(p, "relations").extend([rel] * between(rnd, 65, 70))


@mutation("relation_field_type", "relations", "a relation of the wrong JSON type")
def _relation_field_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    src, dst = two_read(rnd, scene)
    rel: Any = {"src": src, "label": "knows", "dst": dst}
    key = choose(rnd, ("src", "dst", "whole"))
    if key == "whole":
        rel = choose(rnd, (f"{src} knows {dst}", [src, "knows", dst], None, 3))
    else:
        rel[key] = junk(rnd, JUNK_STR)
    items(p, "relations").append(rel)


# - core files

@mutation("core_name_typo", "core_files", "a core file that is not AGENTS.md, SOUL.md or USER.md")
def _core_name_typo(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "core_files").append({"name": choose(rnd, CORE_TYPOS), "content": "x"})


@mutation("core_oversize", "core_files",
          "a core file past 200,000 chars or vault.core_file_max_bytes")
def _core_oversize(rnd: Random, p: Proposal, scene: Scene) -> None:
    content = choose(rnd, ("x" * 200_001, "\U0001f600" * 70_000, "\u4e2d" * 90_000))
    items(p, "core_files").append({"name": "AGENTS.md", "content": content})


@mutation("too_many_core_files", "core_files", "more than 3 core files in one write")
def _too_many_core_files(rnd: Random, p: Proposal, scene: Scene) -> None:
    names = ("AGENTS.md", "USER.md", "AGENTS.md", "USER.md", "AGENTS.md")
    items(p, "core_files").extend({"name": n, "content": "rules"} for n in names)


@mutation("graph_list_type", "objects|relations|core_files",
          "objects, relations or core_files of the wrong JSON type")
def _graph_list_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    p[choose(rnd, ("objects", "relations", "core_files"))] = junk(rnd, JUNK_LIST)


# - organize: the disposition

ORGANIZE = frozenset({"organize"})


def _is_middle(scene: Scene) -> bool:
    return not scene.last_page


def _is_last_fresh(scene: Scene) -> bool:
    return scene.last_page and not scene.has_targets


def _is_last_targeted(scene: Scene) -> bool:
    return scene.last_page and scene.has_targets


def _clear_targets(p: Proposal) -> None:
    p["evidence"], p["core_files"] = [], []


@mutation("events_missing", "events", "no disposition for the claimed event", ORGANIZE)
def _events_missing(rnd: Random, p: Proposal, scene: Scene) -> None:
    if flip(rnd):
        p.pop("events", None)
    else:
        p["events"] = []


@mutation("events_two", "events", "two dispositions (exactly one is allowed)", ORGANIZE)
def _events_two(rnd: Random, p: Proposal, scene: Scene) -> None:
    one = {"event_id": scene.event_id, "outcome": "continue", "progress": "half"}
    p["events"] = [one, {**one, "event_id": choose(rnd, scene.other_events)}]


@mutation("wrong_event_id", "events", "the disposition names another (or no) event", ORGANIZE)
def _wrong_event_id(rnd: Random, p: Proposal, scene: Scene) -> None:
    wrong = junk(rnd, scene.other_events + BAD_INTS)
    p["events"] = [{"event_id": wrong, "outcome": "continue", "progress": "read a page"}]


@mutation("events_type", "events", "events of the wrong JSON shape", ORGANIZE)
def _events_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    one = {"event_id": scene.event_id, "outcome": "continue", "progress": "p"}
    p["events"] = choose(rnd, (one, "continue", None, [None], [[one]], [one["outcome"]],
                                        [{"outcome": "continue", "progress": "p"}],
                                        [{"event_id": scene.event_id, "progress": "p"}]))


@mutation("outcome_typo", "events", "an outcome that is not continue, linked or archive_only",
          ORGANIZE)
def _outcome_typo(rnd: Random, p: Proposal, scene: Scene) -> None:
    set_disposition(p, scene, choose(rnd, OUTCOME_TYPOS), progress="p", reason="r")


@mutation("skip_unread_page", "events",
          "linked or archive_only before the last page skips unread text",
          ORGANIZE, when=_is_middle)
def _skip_unread_page(rnd: Random, p: Proposal, scene: Scene) -> None:
    outcome = choose(rnd, ("linked", "archive_only"))
    set_disposition(p, scene, outcome, reason="nothing here", progress="done")


@mutation("continue_blank_progress", "events", "continue needs progress", ORGANIZE)
def _continue_blank_progress(rnd: Random, p: Proposal, scene: Scene) -> None:
    set_disposition(p, scene, "continue", progress=choose(rnd, BLANKS))


@mutation("progress_oversize", "events", "progress past 2,000 chars", ORGANIZE)
def _progress_oversize(rnd: Random, p: Proposal, scene: Scene) -> None:
    set_disposition(p, scene, "continue", progress=oversize(rnd, 2_000))


@mutation("reason_oversize", "events", "reason past 1,000 chars", ORGANIZE)
def _reason_oversize(rnd: Random, p: Proposal, scene: Scene) -> None:
    outcome = choose(rnd, ("archive_only", "continue", "linked"))
    set_disposition(p, scene, outcome, progress="p", reason=oversize(rnd, 1_000))


@mutation("linked_without_target", "events", "linked needs at least one target",
          ORGANIZE, when=_is_last_fresh)
def _linked_without_target(rnd: Random, p: Proposal, scene: Scene) -> None:
    _clear_targets(p)
    set_disposition(p, scene, "linked")


@mutation("archive_only_after_targets", "events",
          "an event with object targets cannot be archive_only",
          ORGANIZE, when=_is_last_targeted)
def _archive_only_after_targets(rnd: Random, p: Proposal, scene: Scene) -> None:
    if flip(rnd):
        _clear_targets(p)
    set_disposition(p, scene, "archive_only", reason="small talk")


@mutation("archive_only_with_target", "events", "archive_only may not cite the event",
          ORGANIZE, when=_is_last_fresh)
def _archive_only_with_target(rnd: Random, p: Proposal, scene: Scene) -> None:
    start = scene.page[0]
    items(p, "evidence").append({"object_id": scene.read_ids[0], "event_id": scene.event_id,
                                 "start": start, "end": start + 1})
    set_disposition(p, scene, "archive_only", reason="small talk")


@mutation("archive_only_no_reason", "events", "archive_only needs a reason",
          ORGANIZE, when=_is_last_fresh)
def _archive_only_no_reason(rnd: Random, p: Proposal, scene: Scene) -> None:
    _clear_targets(p)
    set_disposition(p, scene, "archive_only", reason=choose(rnd, BLANKS))


@mutation("continue_without_change", "events", "continue on the last page must change something",
          ORGANIZE, when=lambda s: s.last_page)
def _continue_without_change(rnd: Random, p: Proposal, scene: Scene) -> None:
    for key in ("objects", "relations", "evidence", "core_files"):
        p[key] = []
    set_disposition(p, scene, "continue", progress="nothing new, will look again")


# - organize: evidence

@mutation("evidence_outside_page", "evidence", "evidence outside the chars this batch read",
          ORGANIZE)
def _evidence_outside_page(rnd: Random, p: Proposal, scene: Scene) -> None:
    start, end = scene.page
    k = between(rnd, 1, 5_000)
    span = choose(rnd, (
        (start - k, start + 1), (end - 1, end + k), (end, end + k), (start - k, end + k),
        (scene.event_chars, scene.event_chars + k), (start + 3, start + 3),
        (start + 9, start + 2), (start, 2**63), (2**64, 2**64 + 1), (10**30, 10**30 + 1)))
    items(p, "evidence").append({"object_id": scene.read_ids[0], "event_id": scene.event_id,
                                 "start": span[0], "end": span[1]})


@mutation("evidence_wrong_event", "evidence", "evidence citing another event", ORGANIZE)
def _evidence_wrong_event(rnd: Random, p: Proposal, scene: Scene) -> None:
    event = choose(rnd, scene.other_events + (0, -5, 10**6, 2**70))
    start = scene.page[0]
    items(p, "evidence").append({"object_id": scene.read_ids[0], "event_id": event,
                                 "start": start, "end": start + 1})


@mutation("evidence_unknown_object", "evidence", "evidence for an object that does not exist",
          ORGANIZE)
def _evidence_unknown_object(rnd: Random, p: Proposal, scene: Scene) -> None:
    start = scene.page[0]
    target = ghost_id(rnd) if flip(rnd) else choose(rnd, PATH_IDS
                                                                             + BAD_TYPE_IDS)
    items(p, "evidence").append({"object_id": target, "event_id": scene.event_id,
                                 "start": start, "end": start + 1})


@mutation("evidence_field_type", "evidence", "evidence of the wrong JSON type", ORGANIZE)
def _evidence_field_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    ev: Any = {"object_id": scene.read_ids[0], "event_id": scene.event_id,
               "start": scene.page[0], "end": scene.page[0] + 1}
    key = choose(rnd, ("event_id", "start", "end", "object_id", "whole"))
    if key == "whole":
        ev = choose(rnd, ("0-10", [0, 10], None, 7))
    else:
        ev[key] = choose(rnd, (None, "abc", 1.5, [1], {"n": 1}, -1, ""))
    items(p, "evidence").append(ev)


# - deep

DEEP = frozenset({"deep"})


def _variant(rnd: Random, object_id: str) -> str:
    """An id that looks like `object_id` but is another string (case, spaces, invisible chars,
    combining marks, lookalikes)."""
    kind, _, slug = object_id.partition(":")
    return choose(rnd, (
        f"{kind.capitalize()}:{slug}", f"{object_id} ", f" {object_id}", f"{object_id}\u200d",
        f"{kind}:{slug}\u0301", f"{kind}:{slug.upper()}", f"{kind}:\uff41{slug}",
        f"{kind}: {slug}", f"{kind}:{slug}-ghost", object_id.replace(":", "\uff1a")))


@mutation("reviewed_missing", "reviewed", "an id of the batch is not confirmed", DEEP)
def _reviewed_missing(rnd: Random, p: Proposal, scene: Scene) -> None:
    ids = list(shuffled(rnd, scene.reviewed))
    p["reviewed"] = ids[: between(rnd, 0, len(ids) - 1)]


@mutation("reviewed_outside_slice", "reviewed", "confirms a snapshot id that is not in this batch",
          DEEP)
def _reviewed_outside_slice(rnd: Random, p: Proposal, scene: Scene) -> None:
    ids = list(scene.reviewed)
    outsider = choose(rnd, scene.outside_slice)
    if flip(rnd):
        ids[between(rnd, 0, len(ids) - 1)] = outsider
    else:
        ids.append(outsider)
    p["reviewed"] = ids


@mutation("reviewed_unknown", "reviewed",
          "confirms an id that is no object (a near miss of a real one)",
          DEEP)
def _reviewed_unknown(rnd: Random, p: Proposal, scene: Scene) -> None:
    ids = list(scene.reviewed)
    at = between(rnd, 0, len(ids) - 1)
    kind = choose(rnd, ("ghost", "bad", "near"))
    ids[at] = (ghost_id(rnd) if kind == "ghost" else _variant(rnd, ids[at]) if kind == "near"
               else choose(rnd, PATH_IDS + BAD_TYPE_IDS))
    p["reviewed"] = ids


@mutation("reviewed_overflow", "reviewed", "more than 4 confirmations (duplicates included)",
          DEEP, when=lambda s: len(s.reviewed) == 4)
def _reviewed_overflow(rnd: Random, p: Proposal, scene: Scene) -> None:
    extra = some(rnd, scene.reviewed, 1, 3)
    p["reviewed"] = [*scene.reviewed, *extra]


@mutation("reviewed_type", "reviewed", "reviewed of the wrong JSON type, or missing", DEEP)
def _reviewed_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    junk = choose(rnd, (None, ", ".join(scene.reviewed), [list(scene.reviewed)],
                                 {"ids": list(scene.reviewed)}, [1, 2, 3, 4], "missing"))
    if junk == "missing":
        p.pop("reviewed", None)
    else:
        p["reviewed"] = junk


@mutation("soul_from_deep", "core_files", "the nightly review never rewrites SOUL.md", DEEP)
def _soul_from_deep(rnd: Random, p: Proposal, scene: Scene) -> None:
    items(p, "core_files").append({"name": "SOUL.md", "content": "A new persona."})


@mutation("merge_unread", "merges", "a merge end the batch has not read",
          DEEP, when=lambda s: bool(s.unread_ids))
def _merge_unread(rnd: Random, p: Proposal, scene: Scene) -> None:
    ends = [choose(rnd, scene.unread_ids), choose(rnd, scene.read_ids)]
    if flip(rnd):
        ends.reverse()
    items(p, "merges").append({"loser": ends[0], "survivor": ends[1]})


@mutation("merge_unknown", "merges", "a merge end that does not exist or is no valid id", DEEP)
def _merge_unknown(rnd: Random, p: Proposal, scene: Scene) -> None:
    bad = ghost_id(rnd) if flip(rnd) else choose(rnd, PATH_IDS)
    ends = [bad, choose(rnd, scene.read_ids)]
    if flip(rnd):
        ends.reverse()
    items(p, "merges").append({"loser": ends[0], "survivor": ends[1]})


@mutation("merge_self", "merges", "an object merged into itself", DEEP)
def _merge_self(rnd: Random, p: Proposal, scene: Scene) -> None:
    target = choose(rnd, scene.read_ids)
    items(p, "merges").append({"loser": target, "survivor": target})


@mutation("merge_merged", "merges", "a merge end that is already merged away",
          DEEP, when=lambda s: bool(s.merged))
def _merge_merged(rnd: Random, p: Proposal, scene: Scene) -> None:
    merged, survivor = choose(rnd, scene.merged)
    ends = [merged, choose(rnd, scene.read_ids)]
    if flip(rnd):
        ends.reverse()
    items(p, "merges").append({"loser": ends[0], "survivor": ends[1]})


@mutation("merge_cycle", "merges", "a -> b and b -> a in one write would leave no live object",
          DEEP)
def _merge_cycle(rnd: Random, p: Proposal, scene: Scene) -> None:
    a, b = two_read(rnd, scene)
    items(p, "merges").extend([{"loser": a, "survivor": b}, {"loser": b, "survivor": a}])


@mutation("too_many_merges", "merges", "more than 4 merges in one write", DEEP)
def _too_many_merges(rnd: Random, p: Proposal, scene: Scene) -> None:
    a, b = two_read(rnd, scene)
    items(p, "merges").extend([{"loser": a, "survivor": b}] * between(rnd, 5, 8))


@mutation("merge_type", "merges", "a merge of the wrong JSON type", DEEP)
def _merge_type(rnd: Random, p: Proposal, scene: Scene) -> None:
    a, b = two_read(rnd, scene)
    junk = choose(rnd, ([a, b], f"{a} -> {b}", {"loser": a}, {"loser": a, "survivor": 1},
                                 {"loser": a, "survivor": b, "why": "dup"}))
    if flip(rnd):
        p["merges"] = junk
    else:
        items(p, "merges").append(junk)


# -- text-level junk, noise and the case strategies ----------------------------------------------

NOT_JSON = ("{", "}", "{'node_ids': [1]}", "node_ids=1", '{"a": }', "\x00", "undefined", "{,}",
            "[1,]", '{"events": [}', "<tool_call>", "```json\n{}\n```")
NOT_OBJECT = ("[]", "null", '"proposal"', "42", "true", "[{}]", "NaN", "-Infinity", "1e999",
              '[{"node_ids": [1]}]')
DUPLICATE_KEY_JUNK = {"compact": ('"node_ids": "all"', '"summary": null'),
                      "organize": ('"events": null', '"objects": "x"'),
                      "deep": ('"reviewed": null', '"merges": 3')}


def _raw_junk(rnd: Random, raw: str, scene: Scene) -> tuple[str, str, bool]:
    """(label, new raw text, still a JSON object?) for one text-level breakage of `raw`."""
    kind = choose(rnd, ("not_json", "not_object", "deep_nesting", "huge_int_literal",
                        "truncated", "duplicate_key_junk", "blank"))
    if kind == "not_json":
        return kind, choose(rnd, NOT_JSON), False
    if kind == "not_object":
        return kind, choose(rnd, NOT_OBJECT), False
    if kind == "deep_nesting":
        depth = choose(rnd, (50_000, 100_000))
        opener, closer = choose(rnd, (("[", "]"), ('{"a":', "}")))
        return kind, opener * depth + "1" * (opener == '{"a":') + closer * depth, False
    if kind == "huge_int_literal":
        digits = "9" * choose(rnd, (4_301, 5_000, 20_000))
        return kind, raw[:-1] + (", " if raw != "{}" else "") + f'"x": {digits}}}', False
    if kind == "truncated":
        return kind, raw[: between(rnd, 1, len(raw) - 1)], False
    if kind == "blank":
        return kind, choose(rnd, ("", "   ", "\n")), True
    junk = choose(rnd, DUPLICATE_KEY_JUNK[scene.mode])
    return kind, raw[:-1] + (", " if raw != "{}" else "") + junk + "}", True


def free_text_slots(p: Proposal) -> list[tuple[Any, Any]]:
    """The non-blank free text of a proposal: object names, summaries, bodies, progress,
    reasons and core file contents (not ids, labels, outcomes or core file names)."""
    return [(c, k) for c, k in string_slots(p) if c[k].strip() and (
        k in ("summary", "body", "progress", "reason", "content")
        or (k == "name" and "id" in c))]


def _add_noise(rnd: Random, p: Proposal) -> None:
    """Decorate free text of a (valid) proposal with awkward but valid Unicode."""
    texts = free_text_slots(p)
    if not texts:
        return
    for container, key in some(rnd, texts, 0, 3):
        container[key] = insert(rnd, container[key], choose(rnd, NOISE))


def _allowed(context: str, is_object: bool) -> frozenset[str]:
    if not is_object:
        return frozenset({"malformed"})
    extra = {"claimed": set(), "stale_revision": {"refused"}, "lease_lost": {"refused"},
             "replayed_token": {"replayed"}}[context]
    return frozenset({"correction", *extra})


def _pick(draw: DrawFn, options: Sequence[T]) -> T:
    """One of `options`, drawn by Hypothesis."""
    return options[draw(_between(0, len(options) - 1))]


def build_case(scenes: Sequence[Scene], count: int, seed: int) -> Case:
    """A malformed commit for one of `scenes`: `count` mutations (none only in a context that
    refuses by itself), maybe Unicode noise and text-level breakage, all chosen by `seed`."""
    rnd = Random(seed)
    scene = choose(rnd, scenes)
    context = "claimed" if count and rnd.random() < 0.7 else choose(rnd, CONTEXTS[1:])
    chosen = [choose(rnd, catalogue_for(scene)) for _ in range(count)]
    p = copy.deepcopy(scene.base)
    if flip(rnd):
        _add_noise(rnd, p)
    for m in chosen:
        m.apply(rnd, p, scene)
    labels = [m.label for m in chosen]
    raw = json.dumps(p, ensure_ascii=flip(rnd))
    is_object = True
    if rnd.random() < 0.1:
        label, raw, is_object = _raw_junk(rnd, raw, scene)
        labels.append(label)
    return Case(scene, context, tuple(labels), raw, _allowed(context, is_object))


def malformed_cases(scenes: Sequence[Scene]) -> st.SearchStrategy[Case]:
    """Cases of `build_case`: Hypothesis draws the number of mutations (a failure shrinks to the
    fewest) and the seed."""
    return st.builds(functools.partial(build_case, tuple(scenes)), _between(0, 3), _SEEDS)


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-(2**80), 2**80),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6))
_KEYS = st.one_of(st.sampled_from(("node_ids", "summary", "objects", "relations", "evidence",
                                   "core_files", "events", "reviewed", "merges", "id", "name",
                                   "event_id", "outcome", "label", "src", "dst")),
                  st.text(max_size=4))
JSON_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=8)


@functools.cache
def _top_level(fields: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON, mostly an object keyed by the tool's own field names."""
    keys = st.sampled_from((*fields, "objects", "x"))
    return st.one_of(st.dictionaries(keys, JSON_VALUES, min_size=1, max_size=5), JSON_VALUES)


@st.composite
def arbitrary_cases(draw: DrawFn, scenes: list[Scene]) -> Case:
    """Completely arbitrary JSON as the arguments of a claimed batch."""
    scene = scenes[draw(_between(0, len(scenes) - 1))]
    value = draw(_top_level(tuple(scene.base)))
    raw = json.dumps(value, ensure_ascii=draw(_FLIP))
    is_object = isinstance(value, dict)
    return Case(scene, "claimed", ("arbitrary_json",), raw, _allowed("claimed", is_object))


# -- fixed cases (for the worker test and the regression tests) ----------------------------------


def mutated(scene: Scene, labels: Sequence[str], seed: int = 0) -> Proposal:
    """The scene's base proposal after the named mutations, with a fixed seed."""
    by_label = {m.label: m for m in catalogue_for(scene)}
    rnd, p = Random(seed), copy.deepcopy(scene.base)
    for label in labels:
        by_label[label].apply(rnd, p, scene)
    return p


def decorated(p: Proposal) -> Proposal:
    """`p` with every awkward-but-valid NOISE char appended to each non-blank free text."""
    p = copy.deepcopy(p)
    for container, key in free_text_slots(p):
        container[key] += "".join(NOISE)
    return p
