"""Long-term memory: object records, relations and evidence, projects, the core files
(AGENTS.md, SOUL.md, USER.md), the proposal models a mode commits, the graph writes that
apply them, and the secret detector that guards every write."""
