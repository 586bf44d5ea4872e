"""Jobs and the modes they run: the job, batch and receipt tables, the worker's lease, the
model-usage ledger, explicit requests, the scheduler (threshold, hourly, 02:50 nightly), the
worker that commits each batch in one transaction, and the batch loop and claim/commit protocol
every mode (jobs/modes/: compact, organize, deep) runs under."""
