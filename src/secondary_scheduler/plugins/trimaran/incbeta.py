"""The regularized incomplete beta function I_x(a, b), vectorised with numpy.

Why not ``scipy.special.betainc``: it is the only thing the scheduler would need from
scipy, and scipy is about a third of the scheduler image (docs/images.md). Why this
algorithm: upstream's LowRiskOverCommitment calls gonum's ``mathext.RegIncBeta``, which
is gonum's Go port of Stephen Moshier's Cephes ``incbet``. This module follows the same
algorithm step by step — the power series for small ``b * x``, the swap ``I_x(a, b) =
1 - I_{1-x}(b, a)`` above the mean, the two continued fractions (``incbcf``,
``incbd``) with their rescaling by ``big``/``biginv``, the 300-step cap, and the same
constants and overflow guards (``MACHEP``, ``MAXGAM``, ``MAXLOG``, ``MINLOG``) — with
every floating-point operation in the same order, so that the scores built on it round
like upstream's. (scipy's own ``betainc`` now uses Boost's algorithm, not Cephes.)

gonum's B(a, b) is exp(Lgamma(a) + Lgamma(b) - Lgamma(a + b)) with Go's ``math.Lgamma``,
and that sum cancels heavily for large a, b, so Go's Lgamma and Log (both fdlibm) are ported
here too: against gonum, results are bit for bit for most arguments and within ~1e-14
relative elsewhere (numpy's exp and pow round a few last bits differently from Go's).

Each element is computed independently; the iterative parts run for all elements at
once, and an element leaves the loop at the step where its own scalar loop would stop.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

MACHEP = 2.0**-53
"""Cephes' machine epsilon: half an ulp of 1."""
MAXGAM = 171.624376956302725
"""Above this a + b, Gamma(a + b) overflows: use logarithms."""
MAXLOG = 1024 * math.log(2)
"""log of the largest float (ln 2 times 1024 is exact in binary, as in Go's constant)."""
MINLOG = -1075 * math.log(2)
"""log of the smallest subnormal; Go's exact constant rounds to this same float."""
BIG = 4.503599627370496e15
"""2**52: when a continued fraction's terms grow past it, they are scaled down by ``BIGINV``."""
BIGINV = 2.22044604925031308085e-16
"""2**-52."""
CF_THRESHOLD = 3.0 * MACHEP
"""A continued fraction has converged when successive approximants differ by less than this (relative)."""
CF_STEPS = 301
"""The continued fractions' step cap (Cephes' ``n <= 300`` loop); the last approximant is the answer."""


def betainc(a: npt.ArrayLike, b: npt.ArrayLike, x: npt.ArrayLike) -> FloatArray:
    """I_x(a, b) element-wise, arguments broadcast together (scalars give a 0-d array).

    0 at x = 0 and 1 at x = 1; NaN where a <= 0, b <= 0, x is outside [0, 1] or an
    argument is NaN (gonum panics there; the caller guards).
    """
    a_arr, b_arr, x_arr = np.broadcast_arrays(
        np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), np.asarray(x, dtype=np.float64)
    )
    out = np.full(a_arr.shape, np.nan, dtype=np.float64)
    valid = (a_arr > 0) & (b_arr > 0)
    out[valid & (x_arr == 0)] = 0.0
    out[valid & (x_arr == 1)] = 1.0
    interior = valid & (x_arr > 0) & (x_arr < 1)
    if np.any(interior):
        with np.errstate(all="ignore"):
            out[interior] = _incbet(a_arr[interior], b_arr[interior], x_arr[interior])
    return out


def _incbet(aa: FloatArray, bb: FloatArray, xx: FloatArray) -> FloatArray:
    """Cephes' incbet for 1-d arrays with a, b > 0 and 0 < x < 1."""
    result = np.empty_like(xx)

    # Small b * x (and x not near 1): the power series directly, no swap.
    series = (bb * xx <= 1) & (xx <= 0.95)
    if np.any(series):
        result[series] = _pseries(aa[series], bb[series], xx[series])
    rest = ~series
    aa, bb, xx = aa[rest], bb[rest], xx[rest]

    # Above the mean, work on the complement: I_x(a, b) = 1 - I_{1-x}(b, a).
    w = 1 - xx
    flip = xx > aa / (aa + bb)
    a = np.where(flip, bb, aa)
    b = np.where(flip, aa, bb)
    xc = np.where(flip, xx, w)
    x = np.where(flip, w, xx)

    t = np.empty_like(x)
    flipped_series = flip & (b * x <= 1.0) & (x <= 0.95)
    if np.any(flipped_series):
        t[flipped_series] = _pseries(a[flipped_series], b[flipped_series], x[flipped_series])
    fraction = ~flipped_series
    if np.any(fraction):
        t[fraction] = _by_continued_fraction(a[fraction], b[fraction], x[fraction], xc[fraction])

    result[rest] = _complement_if_flipped(t, flip)
    return result


def _by_continued_fraction(a: FloatArray, b: FloatArray, x: FloatArray, xc: FloatArray) -> FloatArray:
    """incbet's main branch: a continued fraction times x^a (1-x)^b / (a B(a, b))."""
    # The expansion that converges better: incbcf below this point, incbd (divided by xc) above.
    y = x * (a + b - 2.0) - (a - 1.0)
    use_incbcf = y < 0.0
    w = _continued_fraction(a, b, x, use_incbcf)
    w = np.where(use_incbcf, w, w / xc)

    y = a * _log(x)
    t = b * _log(xc)
    direct = ((a + b) < MAXGAM) & (np.abs(y) < MAXLOG) & (np.abs(t) < MAXLOG)

    # No overflow possible: the factor itself.
    product = np.power(xc, b)
    product = product * np.power(x, a)
    product = product / a
    product = product * w
    lbeta = _lbeta(a, b)
    product = product * (1.0 / np.exp(lbeta))

    # Otherwise in logarithms, flushed to 0 below the smallest subnormal.
    logarithm = y + (t - lbeta)
    logarithm = logarithm + _log(w / a)
    from_logarithm = np.where(logarithm < MINLOG, 0.0, np.exp(logarithm))

    return np.where(direct, product, from_logarithm)


def _complement_if_flipped(t: FloatArray, flip: npt.NDArray[np.bool_]) -> FloatArray:
    """Undo the swap: 1 - t, kept just below 1 when t is within MACHEP of 0."""
    complement = np.where(t <= MACHEP, 1.0 - MACHEP, 1.0 - t)
    return np.where(flip, complement, t)


def _continued_fraction(
    a: FloatArray, b: FloatArray, x: FloatArray, use_incbcf: npt.NDArray[np.bool_]
) -> FloatArray:
    """Cephes' incbcf (where ``use_incbcf``) or incbd (elsewhere), element-wise.

    Both evaluate the same recurrence of approximants p/q, two partial numerators per
    step; they differ in the variable (x, or x / (1 - x) for incbd) and in which of the
    k2, k6 factors counts up and which down. A step's arithmetic is the scalar loop's.
    """
    size = a.shape[0]
    answer = np.ones(size)
    # The state of the elements still iterating, and where their answers go.
    index = np.arange(size)
    v = np.where(use_incbcf, x, x / (1.0 - x))
    k1 = a.copy()
    k2 = np.where(use_incbcf, a + b, b - 1.0)
    k3 = a.copy()
    k4 = a + 1.0
    k5 = np.ones(size)
    k6 = np.where(use_incbcf, b - 1.0, a + b)
    k7 = a + 1.0
    k8 = a + 2.0
    k2_step = np.where(use_incbcf, 1.0, -1.0)
    k6_step = -k2_step
    pkm2 = np.zeros(size)
    qkm2 = np.ones(size)
    pkm1 = np.ones(size)
    qkm1 = np.ones(size)
    ans = np.ones(size)
    r = np.ones(size)

    for _ in range(CF_STEPS):
        xk = -(v * k1 * k2) / (k3 * k4)
        pk = pkm1 + pkm2 * xk
        qk = qkm1 + qkm2 * xk
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk

        xk = (v * k5 * k6) / (k7 * k8)
        pk = pkm1 + pkm2 * xk
        qk = qkm1 + qkm2 * xk
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk

        r = np.where(qk != 0, pk / qk, r)
        nonzero = r != 0
        change = np.where(nonzero, np.abs((ans - r) / r), 1.0)
        ans = np.where(nonzero, r, ans)

        done = change < CF_THRESHOLD
        if np.any(done):
            answer[index[done]] = ans[done]
            keep = ~done
            if not np.any(keep):
                return answer
            index, v, ans, r = index[keep], v[keep], ans[keep], r[keep]
            k1, k2, k3, k4 = k1[keep], k2[keep], k3[keep], k4[keep]
            k5, k6, k7, k8 = k5[keep], k6[keep], k7[keep], k8[keep]
            k2_step, k6_step = k2_step[keep], k6_step[keep]
            pk, qk = pk[keep], qk[keep]
            pkm1, pkm2, qkm1, qkm2 = pkm1[keep], pkm2[keep], qkm1[keep], qkm2[keep]

        k1 = k1 + 1.0
        k2 = k2 + k2_step
        k3 = k3 + 2.0
        k4 = k4 + 2.0
        k5 = k5 + 1.0
        k6 = k6 + k6_step
        k7 = k7 + 2.0
        k8 = k8 + 2.0

        # Keep the approximants' terms in range (both tests look at the unscaled pk, qk).
        large = (np.abs(qk) + np.abs(pk)) > BIG
        if np.any(large):
            pkm2, pkm1 = np.where(large, pkm2 * BIGINV, pkm2), np.where(large, pkm1 * BIGINV, pkm1)
            qkm2, qkm1 = np.where(large, qkm2 * BIGINV, qkm2), np.where(large, qkm1 * BIGINV, qkm1)
        small = (np.abs(qk) < BIGINV) | (np.abs(pk) < BIGINV)
        if np.any(small):
            pkm2, pkm1 = np.where(small, pkm2 * BIG, pkm2), np.where(small, pkm1 * BIG, pkm1)
            qkm2, qkm1 = np.where(small, qkm2 * BIG, qkm2), np.where(small, qkm1 * BIG, qkm1)

    # Out of steps: the last approximant.
    answer[index] = ans
    return answer


def _pseries(a: FloatArray, b: FloatArray, x: FloatArray) -> FloatArray:
    """Cephes' pseries: I_x(a, b) by its power series, for small b * x and x not near 1."""
    ai = 1.0 / a
    u = (1.0 - b) * x
    v = u / (a + 1.0)
    t1 = v
    t = u
    s = np.zeros_like(x)
    z = MACHEP * ai

    # Sum terms until each element's own term drops to its tolerance; n is shared, as
    # every element starts at 2 and steps by 1.
    n = 2.0
    active = np.abs(v) > z
    index = np.flatnonzero(active)
    t_run, v_run, s_run = t[index], v[index], s[index]
    b_run, x_run, a_run, z_run = b[index], x[index], a[index], z[index]
    while index.size:
        u_run = (n - b_run) * x_run / n
        t_run = t_run * u_run
        v_run = t_run / (a_run + n)
        s_run = s_run + v_run
        n += 1.0
        going = np.abs(v_run) > z_run
        if not np.all(going):
            stopped = ~going
            s[index[stopped]] = s_run[stopped]
            index, t_run, v_run, s_run = index[going], t_run[going], v_run[going], s_run[going]
            b_run, x_run, a_run, z_run = b_run[going], x_run[going], a_run[going], z_run[going]

    s = s + t1
    s = s + ai

    u = a * _log(x)
    direct = ((a + b) < MAXGAM) & (np.abs(u) < MAXLOG)
    lbeta = _lbeta(a, b)
    product = s * (1.0 / np.exp(lbeta)) * np.power(x, a)
    logarithm = -lbeta + u + _log(s)
    from_logarithm = np.where(logarithm < MINLOG, 0.0, np.exp(logarithm))
    return np.where(direct, product, from_logarithm)


def _lbeta(a: FloatArray, b: FloatArray) -> FloatArray:
    """log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b), in gonum's order (a, b > 0).

    gonum's Beta(a, b) is the exponential of this, so B(a, b) is ``np.exp(_lbeta(a, b))``.
    """
    return (_lgamma(a) + _lgamma(b)) - _lgamma(a + b)


def _log(values: FloatArray) -> FloatArray:
    """Natural logarithm as Go's ``math.Log`` computes it (FreeBSD's ``e_log.c``, as amd64's assembly).

    Go's results differ from the C library's in the last bit for about 1 % of arguments;
    incbet multiplies logarithms by a and b, which can be large, so it uses this one.
    x = 2**k (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)), then log(1 + f) from s = f / (2 + f).
    """
    x = np.asarray(values, dtype=np.float64)
    mantissa, exponent = np.frexp(x)
    low = mantissa < _HALF_SQRT2
    mantissa = np.where(low, mantissa * 2, mantissa)
    k = np.where(low, exponent - 1, exponent).astype(np.float64)
    f = mantissa - 1
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * _horner(_LOG_L[0::2], s4)
    t2 = s4 * _horner(_LOG_L[1::2], s4)
    r = t1 + t2
    hfsq = 0.5 * f * f
    result = k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)
    # Special values: log(+inf) = +inf, log(NaN) = NaN, log(0) = -inf, log(x < 0) = NaN.
    special = ~np.isfinite(x) | (x <= 0)
    if np.any(special):
        result = np.where(special, np.log(np.where(special, x, 1.0)), result)
    return result


def _lgamma(values: FloatArray) -> FloatArray:
    """log Gamma(x) for x > 0 (NaN stays NaN, +inf gives +inf) as Go's ``math.Lgamma`` computes it.

    gonum's Lbeta uses Go's Lgamma, the FreeBSD/fdlibm ``e_lgamma_r`` algorithm: rational
    approximations around the minimum of Gamma below 2, a rational function times a
    product of shifts below 8, Stirling's series below 2**58 and ``x (log x - 1)`` above.
    Ported here for positive arguments only (all incbet needs), with the same
    coefficients and evaluation order, because log B(a, b) cancels: a last-bit difference
    in lgamma(a + b) shows up many digits higher in I_x(a, b) when a and b are large.
    """
    x = np.asarray(values, dtype=np.float64)
    out = np.array(x, dtype=np.float64, copy=True)  # NaN and +inf pass through
    out[x == 0] = np.inf

    tiny = (x > 0) & (x < _TINY)
    out[tiny] = -_log(x[tiny])

    out[(x == 1) | (x == 2)] = 0.0

    below_two = (x >= _TINY) & (x < 2) & (x != 1)
    if np.any(below_two):
        out[below_two] = _lgamma_below_two(x[below_two])

    below_eight = (x > 2) & (x < 8)
    if np.any(below_eight):
        out[below_eight] = _lgamma_below_eight(x[below_eight])

    stirling = (x >= 8) & (x < 2.0**58)
    if np.any(stirling):
        v = x[stirling]
        t = _log(v)
        z = 1 / v
        y = z * z
        w = _horner(_LGAM_W[1:], y)  # W1 + y (W2 + y (... + y W6))
        w = _LGAM_W[0] + z * w
        out[stirling] = (v - 0.5) * (t - 1) + w

    huge = (x >= 2.0**58) & np.isfinite(x)
    out[huge] = x[huge] * (_log(x[huge]) - 1)
    return out


def _horner(coefficients: tuple[float, ...], y: FloatArray) -> FloatArray:
    """c0 + y (c1 + y (c2 + ...)), innermost first, as fdlibm nests it."""
    total = np.full_like(y, coefficients[-1])
    for coefficient in reversed(coefficients[:-1]):
        total = coefficient + y * total
    return total


def _lgamma_below_two(x: FloatArray) -> FloatArray:
    """Lgamma on [2**-70, 2) without 1: -log x below 0.9, plus one of three expansions in y."""
    base = np.where(x <= 0.9, -_log(x), 0.0)
    # Which expansion (0: around 1 or 2, 1: around the minimum, 2: near 0 or 1), and its variable.
    small = x <= 0.9
    kind = np.where(
        small,
        np.where(x >= _SPLIT_LOW_UPPER, 0, np.where(x >= _SPLIT_LOW_LOWER, 1, 2)),
        np.where(x >= _SPLIT_HIGH_UPPER, 0, np.where(x >= _SPLIT_HIGH_LOWER, 1, 2)),
    )
    y = np.select(
        [small & (kind == 0), small & (kind == 1), small & (kind == 2), kind == 0, kind == 1],
        [1 - x, x - _TC_MINUS_ONE, x, 2 - x, x - _TC],
        default=x - 1,
    )
    out = np.empty_like(x)

    first = kind == 0
    if np.any(first):
        v = y[first]
        z = v * v
        p1 = _horner(_LGAM_A[0::2], z)
        p2 = z * _horner(_LGAM_A[1::2], z)
        p = v * p1 + p2
        out[first] = base[first] + (p - 0.5 * v)

    second = kind == 1
    if np.any(second):
        v = y[second]
        z = v * v
        w = z * v
        p1 = _horner(_LGAM_T[0::3], w)
        p2 = _horner(_LGAM_T[1::3], w)
        p3 = _horner(_LGAM_T[2::3], w)
        p = z * p1 - (_TT - w * (p2 + v * p3))
        out[second] = base[second] + (_TF + p)

    third = kind == 2
    if np.any(third):
        v = y[third]
        p1 = v * _horner(_LGAM_U, v)
        p2 = 1 + v * _horner(_LGAM_V, v)
        out[third] = base[third] + (-0.5 * v + p1 / p2)
    return out


def _lgamma_below_eight(x: FloatArray) -> FloatArray:
    """Lgamma on (2, 8): a rational function of the fraction y, plus log of (y + 2) ... (y + i - 1)."""
    whole = np.floor(x)
    y = x - whole
    p = y * _horner(_LGAM_S, y)
    q = 1 + y * _horner(_LGAM_R, y)
    out = 0.5 * y + p / q
    product = np.ones_like(y)
    for shift in (6.0, 5.0, 4.0, 3.0, 2.0):
        product = np.where(whole > shift, product * (y + shift), product)
    return np.where(whole >= 3, out + _log(product), out)


# fdlibm's constants for log (e_log.c, as in Go's math package).
_HALF_SQRT2 = 7.07106781186547524401e-01
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG_L = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)

# fdlibm's constants for lgamma (Sun's e_lgamma_r.c, as in Go's math package), in decimal.
_TINY = 2.0**-70
_TC = 1.46163214496836224576e00
"""Where Gamma has its minimum on the positive axis."""
# Go evaluates constant expressions exactly and rounds once, which float arithmetic on the
# rounded constants does not always reproduce (Ymin - 1 - 0.27 differs by an ulp), so these
# are the once-rounded values of Ymin - 1 + 0.27, Ymin - 1 - 0.27, Ymin + 0.27, Ymin - 0.27
# and Tc - 1, with Ymin = 1.461632144968362245.
_SPLIT_LOW_UPPER = 0.7316321449683623
_SPLIT_LOW_LOWER = 0.19163214496836226
_SPLIT_HIGH_UPPER = 1.7316321449683623
_SPLIT_HIGH_LOWER = 1.1916321449683622
_TC_MINUS_ONE = 0.46163214496836225
_TF = -1.21486290535849611461e-01
_TT = -3.63867699703950536541e-18
_LGAM_A = (
    7.72156649015328655494e-02,
    3.22467033424113591611e-01,
    6.73523010531292681824e-02,
    2.05808084325167332806e-02,
    7.38555086081402883957e-03,
    2.89051383673415629091e-03,
    1.19270763183362067845e-03,
    5.10069792153511336608e-04,
    2.20862790713908385557e-04,
    1.08011567247583939954e-04,
    2.52144565451257326939e-05,
    4.48640949618915160150e-05,
)
_LGAM_R = (
    1.39200533467621045958e00,
    7.21935547567138069525e-01,
    1.71933865632803078993e-01,
    1.86459191715652901344e-02,
    7.77942496381893596434e-04,
    7.32668430744625636189e-06,
)
_LGAM_S = (
    -7.72156649015328655494e-02,
    2.14982415960608852501e-01,
    3.25778796408930981787e-01,
    1.46350472652464452805e-01,
    2.66422703033638609560e-02,
    1.84028451407337715652e-03,
    3.19475326584100867617e-05,
)
_LGAM_T = (
    4.83836122723810047042e-01,
    -1.47587722994593911752e-01,
    6.46249402391333854778e-02,
    -3.27885410759859649565e-02,
    1.79706750811820387126e-02,
    -1.03142241298341437450e-02,
    6.10053870246291332635e-03,
    -3.68452016781138256760e-03,
    2.25964780900612472250e-03,
    -1.40346469989232843813e-03,
    8.81081882437654011382e-04,
    -5.38595305356740546715e-04,
    3.15632070903625950361e-04,
    -3.12754168375120860518e-04,
    3.35529192635519073543e-04,
)
_LGAM_U = (
    -7.72156649015328655494e-02,
    6.32827064025093366517e-01,
    1.45492250137234768737e00,
    9.77717527963372745603e-01,
    2.28963728064692451092e-01,
    1.33810918536787660377e-02,
)
_LGAM_V = (
    2.45597793713041134822e00,
    2.12848976379893395361e00,
    7.69285150456672783825e-01,
    1.04222645593369134254e-01,
    3.21709242282423911810e-03,
)
_LGAM_W = (
    4.18938533204672725052e-01,
    8.33333333333329678849e-02,
    -2.77777777728775536470e-03,
    7.93650558643019558500e-04,
    -5.95187557450339963135e-04,
    8.36339918996282139126e-04,
    -1.63092934096575273989e-03,
)
