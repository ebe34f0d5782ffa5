"""Experiments that measure real stacks and write Results."""

from collections.abc import Callable
from typing import Any

from ..core.result_schema import Series

# a runner's progress callback: ("start" | "done", the item being measured, its index, how many, its series)
Progress = Callable[[str, Any, int, int, "Series | None"], None]
