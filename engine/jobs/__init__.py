"""Running the modes: explicit requests, the scheduler (threshold, hourly, 02:50 nightly) and
the worker that holds the one lease and commits each batch in one transaction."""
