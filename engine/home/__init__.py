"""`Memory`: one memory home as a library (config, database, clock) and its status report."""
