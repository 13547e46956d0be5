"""Statistics on the driver side, one module per kind: pooled process estimates and the seed's %,
verdicts, drift, spikes. Pure functions of numbers; nothing here reads a file."""
