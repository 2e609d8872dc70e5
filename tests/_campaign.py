"""Shared by the campaign and dataset tests: one 2-worker LocalCluster on 127.0.0.1 per module."""

import pytest


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster for the module: 2 worker processes, loopback only, closed at the end."""
    from distributed import LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                     dashboard_address="127.0.0.1:0")
    try:
        yield c
    finally:
        c.close(timeout=30)
