"""The HTML report: rendered from what aggregation wrote (never from cell files)."""
