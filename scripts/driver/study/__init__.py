"""The study's plumbing: where files go, the cell record, env specs, provenance, locks, rule logs."""
