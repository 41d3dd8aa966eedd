"""How well the remembered daily rise foretold each node's next day, learned as the days pass.

The seasonal rise (``history``) is a node's pattern of the previous days, but the pods that made
that pattern come and go, and an hour's peak carries the node's noise. In replayed weeks of VMs
the rise a node remembered explained about half of the rise that came (docs/loadaware.md, "The
seasonal rise, checked against what came"). Added whole, it made nodes whose afternoons had been
high look fuller than they were and nodes that had just taken VMs at night look emptier.

So the plugin checks its own forecast. Once an hour it writes down each node's mean and the rise
it remembers; a horizon later it has seen how high the node's mean really went (less what the pods
placed on it after the forecast show: ``recentplacements``), and it fits
``rise that came = offset + slope x rise remembered`` by least squares over every node and hour
that came true, older hours weighing less (``DECAY``). The prediction adds the fitted rise
(``slope`` kept in [0, 1]: a pattern is never amplified nor inverted); until ``MIN_PAIRS``
node-hours have come true (a day and a horizon at least), the rise as remembered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray

log = logging.getLogger(__name__)

HOUR = 3600.0
DECAY = 0.99
"""Weight the sums keep at each hour that comes true: ~100 hours of memory."""
MIN_PAIRS = 200.0
"""Node-hours (decayed) that must have come true before the fit is used."""
_LOGGED_MOVE = 0.1
"""Slope change that is logged again."""


@dataclass
class _Forecast:
    """One hour's forecast: per slot its mean then (NaN: not a test), the rise remembered, and the
    highest mean seen since."""

    made_at: float
    mean: FloatArray
    rise: FloatArray
    highest: FloatArray


@dataclass(frozen=True)
class RiseFit:
    """``rise that came = offset + slope x rise remembered``, from ``pairs`` node-hours (decayed)."""

    offset: float
    slope: float
    pairs: float

    def __str__(self) -> str:
        return f"{self.offset:+.1f}pp + {self.slope:.2f} x remembered ({self.pairs:.0f} node-hours)"


class RiseCalibration:
    """The forecasts still running, and the decayed least-squares sums of those that came true."""

    def __init__(self, horizon: float) -> None:
        self.horizon = horizon
        self.fit: RiseFit | None = None
        self._running: list[_Forecast] = []
        self._sums = np.zeros(5)
        """Decayed count, sum x, sum y, sum x^2, sum x*y (x: rise remembered, y: rise that came)."""
        self._logged_slope: float | None = None

    def observe(
        self,
        now: float,
        mean: FloatArray,
        rise: FloatArray,
        patterned: BoolArray,
        placed_since: Callable[[float], FloatArray] | None = None,
    ) -> None:
        """A snapshot: ``mean`` per slot (NaN without a reading), the ``rise`` remembered, which
        slots remember a pattern (only those test it), and what the pods placed after a given
        time show in ``mean`` per slot (taken out of what came: the forecast was of the pods then)."""
        # Due first: a reading past a forecast's horizon is not what it foretold (snapshots are fed
        # at scheduling cycles, so one may come hours late), nor are the pods placed meanwhile known.
        while self._running and now - self._running[0].made_at > self.horizon:
            self._come_true(self._running.pop(0))
        for forecast in self._running:
            size = len(forecast.highest)
            seen = _fitted(mean, size)
            if placed_since is not None:
                seen = seen - _fitted(placed_since(forecast.made_at), size)
            forecast.highest = np.fmax(forecast.highest, seen)
        if not self._running or now - self._running[-1].made_at >= HOUR:
            tested = np.where(patterned, mean, np.nan)
            self._running.append(_Forecast(now, tested, rise.copy(), tested.copy()))

    def forget(self, slot: int) -> None:
        """The slot holds another node now: its running forecasts test nothing."""
        for forecast in self._running:
            if slot < len(forecast.mean):
                forecast.mean[slot] = np.nan

    def calibrated(self, rise: FloatArray, patterned: BoolArray) -> FloatArray:
        """``rise`` as the fit weighs it where a pattern is remembered (0 elsewhere, as before)."""
        fit = self.fit
        if fit is None:
            return rise
        return np.where(patterned, np.clip(fit.offset + fit.slope * rise, 0.0, 100.0), 0.0)

    def _come_true(self, forecast: _Forecast) -> None:
        tested = ~np.isnan(forecast.mean)
        remembered = forecast.rise[tested]
        came = forecast.highest[tested] - forecast.mean[tested]
        self._sums *= DECAY
        self._sums += (
            len(remembered),
            remembered.sum(),
            came.sum(),
            (remembered * remembered).sum(),
            (remembered * came).sum(),
        )
        n, sx, sy, sxx, sxy = self._sums.tolist()
        spread = n * sxx - sx * sx
        if n < MIN_PAIRS or spread <= 0:
            return
        slope = min(1.0, max(0.0, (n * sxy - sx * sy) / spread))
        self.fit = RiseFit(offset=(sy - slope * sx) / n, slope=slope, pairs=n)
        if self._logged_slope is None or abs(slope - self._logged_slope) >= _LOGGED_MOVE:
            self._logged_slope = slope
            log.info("LoadAwarePacking: the seasonal rise that came was %s; predicting with it", self.fit)


def _fitted(values: FloatArray, size: int) -> FloatArray:
    """``values`` cut or padded with NaN to ``size`` (the table may have grown since a forecast)."""
    if len(values) >= size:
        return values[:size]
    return np.concatenate([values, np.full(size - len(values), np.nan)])
