"""The two synthetic studies most table tests read: the seed's 2x2 case and a study-like grid."""
import pytest
from cellfiles import grid, run, write_processes


@pytest.fixture
def seed_case(tmp_path):
    """TF1 graph 10 ms / eager 30 ms; TF2 graph 20 ms / eager 15 ms (tf.keras, numpy, tob)."""
    root = tmp_path / "cells"
    files = [
        *write_processes(root, "tf1.14", 0.010, mode="graph"),
        *write_processes(root, "tf1.14", 0.030, mode="eager"),
        *write_processes(root, "tf2.0", 0.020, mode="graph"),
        *write_processes(root, "tf2.0", 0.015, mode="eager"),
    ]
    return run(tmp_path, files)



@pytest.fixture(scope="session")
def grid_case(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("grid")
    files = grid(tmp_path / "cells")
    return run(tmp_path, files) + (files,)

