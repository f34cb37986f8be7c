"""The array types the statistics pass around, named once.

A figure per task (or per trial) is a one-dimensional numpy array aligned with a list of task
names; its dtype says what it holds: rates, bounds and p-values as floats (NaN where a task has
no figure), counts of trials and passes as 64-bit integers, masks as booleans. Functions that
accept any integer or float input still say ``NDArray[np.integer]`` / ``NDArray[np.floating]``.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

Floats: TypeAlias = NDArray[np.float64]
"""Floats per task or trial: rates, interval ends, p-values, weights (NaN: no figure)."""

Ints: TypeAlias = NDArray[np.int64]
"""64-bit integers per task or trial: trials, passes, errored trials, positions."""

Bools: TypeAlias = NDArray[np.bool_]
"""A flag per task or trial: a mask."""
