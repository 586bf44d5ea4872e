"""The three modes and the loop that runs one batch of each against a model: compact (hot
timeline -> summary heads + archive queue), organize (queue -> objects), deep (nightly review),
and browse, the read-only tools a model may call inside a batch."""
