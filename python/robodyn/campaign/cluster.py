"""The Dask client of a campaign or dataset: a scheduler address, a Client, or a local
cluster on 127.0.0.1."""

from __future__ import annotations

import os


def get_client(scheduler=None, workers=None):
    """``(client, owned)``: a ``distributed.Client`` for ``scheduler`` (an address or a Client)
    or, for None, a new LocalCluster on 127.0.0.1 with ``workers`` worker processes (default one
    per core) of one thread each; ``owned`` says the caller must close it."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise ImportError("robodyn campaigns need Dask: pip install 'robodyn[campaign]' "
                          f"({e})") from None
    if scheduler is not None and not isinstance(scheduler, str):
        return scheduler, False
    if scheduler:
        from ._connect import connect

        return connect(Client, scheduler), True
    workers = int(workers or os.cpu_count() or 1)
    # everything on the loopback interface: scheduler, workers, and the scheduler's HTTP
    # endpoint on a free port (the dashboard, if bokeh is installed)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address="127.0.0.1:0")
    return Client(cluster), True
