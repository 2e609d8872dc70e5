"""Shared by the campaign benchmarks (bench/bench_campaign.py): the load average, the --quick
flag and the CPU seconds of the client and the workers."""


from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import robodyn
from robodyn import campaign as cp
from robodyn.campaign.datasets import uniform_sampler



def load():
    return os.getloadavg()


QUICK = False  # --quick: a smoke test (40 runs of 1 s, a tenth of the dataset)


def cpu_seconds(client):
    """Process CPU seconds so far: (this process: client and scheduler, sum over workers)."""
    workers = client.run(time.process_time)
    return time.process_time(), sum(workers.values())


def cpu_since(client, before):
    now = cpu_seconds(client)
    return now[0] - before[0], now[1] - before[1]
