"""Benchmarks: each module is a command (``python -m bench.NAME``) writing ``bench/results/``."""

from __future__ import annotations

import os
import time


def started() -> tuple[str, str]:
    """When a run starts (UTC, to the minute) and the load averages then, as a
    results header states them."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load
