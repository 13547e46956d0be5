"""Comparisons: every comparison table (one factor changed), best vs best across frameworks, the
seed's tables in its layout, and every cell."""
from driver.report import source_table as seedtable
from driver.report import split, views

ID, TITLE, ORDER = "tables", "Comparisons", 40


def build(data) -> dict:
    return {"groups": split.split_views(data.tabs),
            "best": split.best_vs_best(data.table("frameworks_best"), data.min_effect),
            "seed": seedtable.seed_blocks(data.cells, data.tabs, data.reference_env, data.order),
            "cells": views.cells_table(data.cells)}
