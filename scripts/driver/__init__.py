"""The driver: everything that runs on the workflow's own Python (3.11+), outside the framework envs.

Four layers, each a package; imports only run downward (tests/unit/test_layers.py checks it):

    study   the study's plumbing: paths, the cell record, env specs, provenance, locks, rule logs
    stats   statistics, one home per kind: pooled process estimates, verdicts, drift, spikes
    tables  the table registry, pooling cells, comparison and summary builders, the typed loader,
            the workbook and aggregation
    report  the HTML report: rendering, formatting, figures and one module per section
"""
