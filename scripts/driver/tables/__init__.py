"""The tables: the registry, cells pooled from their processes, the comparison and summary builders,
the typed loader, the workbook and the aggregation that writes them all."""
