"""The user's own code in a device cost table (`secperf device crypto --source ... --name OP`): its
counted operation replaces the library's figure for that operation, whichever Result comes first, and
keeps the library's as the figure the measured handshakes ran, which their fitted residual subtracts
(model/predict.py), so the replacement changes the prediction instead of vanishing into the residual."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .figure import Figure

USER_CODE = "the user's own code"


def set_device_op(
    party_ops: dict[tuple[str, str], Figure], key: tuple[str, str], us: float, user: bool, source: str
) -> None:
    """A counted op of a device Result into a cost table's `party_ops` (user: a row of stack "user")."""
    old = party_ops.get(key)
    old_user = old is not None and old.source.startswith(USER_CODE)
    if user:
        ran = None if old is None else old.as_measured_us if old_user else old.us
        party_ops[key] = Figure(us, f"{USER_CODE}: {source}", as_measured_us=ran)
    elif old is not None and old_user:
        party_ops[key] = replace(old, as_measured_us=us)
    else:
        party_ops[key] = Figure(us, source)


DeviceOp = tuple[tuple[str, str], float, bool, str]  # (party, op), µs, a user-code row, its source


def set_device_ops(party_ops: dict[tuple[str, str], Figure], ops: Iterable[DeviceOp]) -> None:
    """Every counted op of a device Result into `party_ops`, in the Result's order (set_device_op
    each): the table's caller hands the rows over in one call, not one call per row."""
    for key, us, user, source in ops:
        set_device_op(party_ops, key, us, user, source)
