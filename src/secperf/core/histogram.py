"""Latency histograms that merge exactly: log-linear bins, the same rule as secperf-loadgen's
(native/loadgen/lg_stats.c, `lg_hist_index`).

Values are whole microseconds. Below 128 µs every value has its own bin; above, each power of two
is cut into 64 equal bins, so a bin is at most 1/64 (1.6 %) of its values wide, from 128 µs to the
71 minutes a uint32 of microseconds holds, in 1,728 bins at most.

Why bins and not percentiles: several generators' P99s cannot be combined into the P99 of all
their connections (an average of percentiles is no percentile of anything), but their bins can be
added. Merging is a sum of counts per bin, so the merge of the workers' histograms is the very
histogram of all their samples, and a percentile read from it is the one a single generator that
had made every connection would report with the same bins. A percentile is read by nearest rank
(ceil(q n)-th value, as the generator does) and given as its bin's highest value, as HdrHistogram
does: never below the true value, at most 1.6 % above it.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import MeasurementError

LINEAR = 128  # values below have a bin each
SUB_BITS = 6  # 64 bins per power of two above
SCHEME = "log-linear: 1 µs bins below 128 µs, then 64 bins per power of two (lg_hist_index)"


class HistogramError(MeasurementError):
    """A histogram read from a generator or a worker is malformed (not a list of [lower_us, count])."""


def bin_index(us: int) -> int:
    """The bin of a value in µs (values above uint32 saturate, as the generator stores them)."""
    us = min(max(int(us), 0), 0xFFFFFFFF)
    if us < LINEAR:
        return us
    b = us.bit_length() - 1
    return LINEAR + (b - 7) * (1 << SUB_BITS) + (us >> (b - SUB_BITS)) - (1 << SUB_BITS)


def bin_lower(index: int) -> int:
    if index < LINEAR:
        return index
    k = index - LINEAR
    b, sub = 7 + (k >> SUB_BITS), k & ((1 << SUB_BITS) - 1)
    return ((1 << SUB_BITS) + sub) << (b - SUB_BITS)


def bin_width(index: int) -> int:
    return 1 if index < LINEAR else 1 << ((index - LINEAR) >> SUB_BITS) + 1


class Histogram:
    """Counts per bin index. `add` a value, `merge` another histogram, read `quantile`s."""

    __slots__ = ("counts",)

    def __init__(self, counts: dict[int, int] | None = None):
        self.counts: dict[int, int] = dict(counts or {})

    @classmethod
    def of(cls, values_us: Iterable[float]) -> Histogram:
        h = cls()
        for v in values_us:
            h.add(v)
        return h

    @classmethod
    def from_pairs(cls, pairs: object, where: str = "histogram") -> Histogram:
        """From the generator's [[lower_us, count], ...] (its end line's hist_us)."""
        h = cls()
        if not isinstance(pairs, list):
            raise HistogramError(f"{where}: expected a list of [lower_us, count], got {type(pairs).__name__}")
        for p in pairs:
            if not (isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, int) and x >= 0 for x in p)):
                raise HistogramError(f"{where}: {p!r} is not a [lower_us, count] pair of whole numbers")
            i = bin_index(p[0])
            if bin_lower(i) != p[0]:
                raise HistogramError(
                    f"{where}: {p[0]} µs is not a bin's lower edge ({SCHEME}); the generator binned with another rule"
                )
            h.counts[i] = h.counts.get(i, 0) + p[1]
        return h

    def to_pairs(self) -> list[list[int]]:
        return [[bin_lower(i), c] for i, c in sorted(self.counts.items()) if c]

    def add(self, us: float, count: int = 1) -> None:
        i = bin_index(round(us))
        self.counts[i] = self.counts.get(i, 0) + count

    def merge(self, other: Histogram) -> Histogram:
        """In place: the bin-by-bin sum (returns self)."""
        for i, c in other.counts.items():
            self.counts[i] = self.counts.get(i, 0) + c
        return self

    @classmethod
    def merged(cls, hists: Iterable[Histogram]) -> Histogram:
        out = cls()
        for h in hists:
            out.merge(h)
        return out

    @property
    def n(self) -> int:
        return sum(self.counts.values())

    def quantile_us(self, q: float) -> int | None:
        """Nearest rank (the ceil(q n)-th smallest value, as the generator computes it), as its bin's highest value; None when empty."""
        n = self.n
        if n == 0:
            return None
        k = min(max(1, int(q * n + 0.999999)), n)  # the generator's own rank rule (lg_samples_quantile)
        seen = 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= k:
                return bin_lower(i) + bin_width(i) - 1
        return None  # not reached

    def percentiles_ms(self, prefix: str = "") -> dict[str, float | None]:
        """p50/p90/p95/p99/max in ms, the generator's own keys."""
        out: dict[str, float | None] = {}
        for name, q in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p95_ms", 0.95), ("p99_ms", 0.99), ("max_ms", 1.0)):
            v = self.quantile_us(q)
            out[prefix + name] = None if v is None else v / 1000.0
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Histogram) and {k: v for k, v in self.counts.items() if v} == {
            k: v for k, v in other.counts.items() if v
        }

    def __repr__(self) -> str:
        return f"Histogram(n={self.n}, bins={len(self.counts)})"
