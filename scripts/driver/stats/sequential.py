"""Two looks at a duet row: more replicates where a row is still open, at an honest size.

The headline's duets run `replicates` duets per row (look 1); with `max_replicates` above it, a
row still undecided after look 1 gets the rest (look 2), and a decided row stops (docs/design.md,
"Duets on noisy machines"). Looking twice and stopping when a test rejects would reject a true
null more often than its nominal level if each look were tested at that level. Here each look is
tested at a smaller nominal level m(a), chosen so that a null row is rejected at EITHER look with
probability a (a Pocock-style boundary, Pocock 1977), for the t statistics of this design:

    F(m) = P_null( min(p_look1, p_look2) <= m ),   m(a) = F^-1(a)

estimated by simulation (normal replicates under the null; the t statistic is pivotal, so F does
not depend on the mean or the spread). A row's sequential p-value is F(p) of the p at its last
look: rejecting when F(p) <= a rejects only when some look's p <= m(a), so the size is at most a
whatever the stopping rule did (a row that stopped at look 1 had its chance of a look-2 rejection
counted in F too: conservative for it). `two_sided` maps the difference test's p; `one_sided`
maps each one-sided test of the equivalence test (TOST). Intervals drawn with these p-values use
the nominal level m(a), so the drawn interval is the tested one.

With max_replicates == replicates there is one look: F is the identity.
"""
import functools
import math

import numpy as np
from scipy import stats as sps

DRAWS = 200_000
SEED = 20261126


class Looks:
    """The maps of one design: n1 replicates at look 1, n2 in all at look 2 (n2 > n1), or one
    look (n2 == n1)."""

    def __init__(self, n1: int, n2: int, draws: int = DRAWS, seed: int = SEED):
        if n1 < 2 or n2 < n1:
            raise ValueError(f"sequential duets: need 2 <= replicates <= max_replicates, "
                             f"not {n1} and {n2}")
        self.n1, self.n2 = int(n1), int(n2)
        if self.n2 == self.n1:
            self._two = self._one = None
            return
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((draws, self.n2))
        t1 = _t(x[:, :self.n1])
        t2 = _t(x)
        d1, d2 = self.n1 - 1, self.n2 - 1
        two = np.minimum(2 * sps.t.sf(np.abs(t1), d1), 2 * sps.t.sf(np.abs(t2), d2))
        # one-sided (upper) tests: by symmetry the lower ones have the same law
        one = np.minimum(sps.t.sf(t1, d1), sps.t.sf(t2, d2))
        self._two, self._one = np.sort(two), np.sort(one)

    @property
    def sequential(self) -> bool:
        return self._two is not None

    @staticmethod
    def _F(sorted_min, p):
        p = np.asarray(p, dtype=float)
        out = np.searchsorted(sorted_min, p, side="right") / sorted_min.size
        return np.where(np.isnan(p), np.nan, np.minimum(out, 1.0))

    @staticmethod
    def _inverse(sorted_min, a):
        a = np.asarray(a, dtype=float)
        k = np.clip(np.floor(a * sorted_min.size).astype(int) - 1, 0, sorted_min.size - 1)
        out = np.where(a <= 0, 0.0, sorted_min[k])
        return np.where(np.isnan(a), np.nan, out)

    def two_sided(self, p):
        """The sequential p-value of a two-sided test's p at the row's last look."""
        return np.asarray(p, dtype=float) if self._two is None else self._F(self._two, p)

    def one_sided(self, p):
        """The same for a one-sided test (each side of TOST)."""
        return np.asarray(p, dtype=float) if self._one is None else self._F(self._one, p)

    def nominal_two_sided(self, a):
        """m(a): the nominal level each look's two-sided test (and interval) uses for size a."""
        return np.asarray(a, dtype=float) if self._two is None else self._inverse(self._two, a)

    def nominal_one_sided(self, a):
        return np.asarray(a, dtype=float) if self._one is None else self._inverse(self._one, a)


def _t(x):
    n = x.shape[1]
    return x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))


@functools.lru_cache(maxsize=16)
def looks(n1: int, n2: int) -> Looks:
    """The (cached) maps of a design."""
    return Looks(n1, n2)


def simulate_size(n1: int, n2: int, a: float = 0.05, margin: float = 0.0, rows: int = 20000,
                  seed: int = 7, use_maps: bool = True) -> dict:
    """The two-look design run on `rows` null rows, as the study runs it: look 1 with n1
    replicates; a row rejected (difference test) or equivalent (TOST at `margin`, when > 0) at
    look 1 stops; the others get n2. Returns the rates of false 'different' (true mean 0) and of
    false 'equivalent' (true mean at the margin, in sd units of one replicate). use_maps=False
    tests each look at the nominal level: the naive rule, whose size the test shows is too big."""
    lk = looks(n1, n2)
    rng = np.random.default_rng(seed)
    out = {}
    for kind, mean in (("different", 0.0), ("equivalent", margin)):
        if kind == "equivalent" and margin <= 0:
            continue
        x = rng.standard_normal((rows, n2)) + mean
        stop1, rej1 = _decide(x[:, :n1], a, margin, lk, use_maps, kind)
        _, rej2 = _decide(x, a, margin, lk, use_maps, kind)
        rejected = np.where(stop1, rej1, rej2)
        k = int(rejected.sum())
        ci = sps.binomtest(k, rows).proportion_ci()
        out[kind] = {"rate": k / rows, "ci_low": ci.low, "ci_high": ci.high, "rows": rows}
    return out


def _decide(x, a, margin, lk, use_maps, kind):
    n = x.shape[1]
    mean, se = x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(n)
    p = 2 * sps.t.sf(np.abs(mean / se), n - 1)
    diff = (lk.two_sided(p) if use_maps else p) <= a
    if margin > 0:
        p_eq = np.maximum(sps.t.sf((mean + margin) / se, n - 1),
                          sps.t.cdf((mean - margin) / se, n - 1))
        equiv = (lk.one_sided(p_eq) if use_maps else p_eq) <= a
    else:
        equiv = np.zeros_like(diff)
    stop = diff | equiv
    return stop, (diff if kind == "different" else equiv)


def look_summaries(y, n1: int) -> dict | None:
    """One extended row's duets in replicate order -> the summaries looks_test reads, or None
    where the row has no second look (or too few duets in either)."""
    y = np.asarray(y, float)
    if y.size < n1 + 1 or n1 < 2:
        return None
    return {"n1": int(n1), "m1": float(y[:n1].mean()), "s1": float(y[:n1].std(ddof=1)),
            "n": int(y.size), "m": float(y.mean()), "s": float(y.std(ddof=1))}


def _look_t(n1, m1, s1, n, m, s):
    """The two-sample t of look 2 against look 1 (pooled within-look sd, n - 2 df), from the
    look-1 and whole-row summaries: look 2's mean and the within-look spread follow from them."""
    n2 = n - n1
    m2 = (n * m - n1 * m1) / n2
    within = (n - 1) * s ** 2 - n1 * n2 / n * (m1 - m2) ** 2
    sp = np.sqrt(np.maximum(within, 0.0) / (n - 2))
    return (m2 - m1) / (sp * np.sqrt(1 / n1 + 1 / n2)), m2, sp


def looks_test(rows, threshold: float, margin: float = 0.10, alpha_eq: float = 0.05,
               draws: int = 4000, seed: int = 11) -> dict:
    """Do the rows' second-look duets agree with their first look, beyond the rows' spread?

    rows: per extended row, {"n1", "m1", "s1", "n", "m", "s"} (look_summaries). Per row the t of
    look 2's mean against look 1's (pooled within-look sd), mapped to a normal score; the
    statistic is Q = sum of the scores squared (chi-square with k df for rows taken at random).
    The rows are not taken at random: a row got a second look because its first look left it
    open, which selects its look-1 mean and spread. So Q's null distribution is simulated with
    that selection: per row, look-1 duets drawn from N(m, sp) (its own mean and within-look sd)
    are kept only where the design would have left the row open (its sequential p above
    `threshold`, the family's level at look 1, and its TOST not equivalent at alpha_eq), and
    look 2 drawn on. p: the share of simulated Q at or above the observed (Monte Carlo,
    (k + 1) / (draws + 1)). A disturbed second look (a row x period effect: the machine in
    another state) makes Q large; selection alone does not."""
    rows = [r for r in rows if r is not None]
    k = len(rows)
    if not k:
        return {"rows": 0}
    rng = np.random.default_rng(seed)
    m_eq = math.log1p(margin)
    q_obs, shifts, null = 0.0, [], np.zeros(draws)
    for r in rows:
        n1, n = r["n1"], r["n"]
        t, m2, sp = _look_t(n1, r["m1"], r["s1"], n, r["m"], r["s"])
        u = float(sps.norm.isf(sps.t.sf(t, n - 2)))
        q_obs += u * u
        shifts.append(float(m2 - r["m1"]))
        design = looks(n1, max(n, n1))
        kept = np.empty((0, n))
        for _ in range(50):  # rejection sampling of open first looks
            x = r["m"] + sp * rng.standard_normal((4 * draws, n))
            mean1 = x[:, :n1].mean(axis=1)
            se1 = x[:, :n1].std(axis=1, ddof=1) / math.sqrt(n1)
            p_seq = design.two_sided(2 * sps.t.sf(np.abs(mean1 / se1), n1 - 1))
            tost = np.maximum(sps.t.sf((mean1 + m_eq) / se1, n1 - 1),
                              sps.t.cdf((mean1 - m_eq) / se1, n1 - 1))
            open_ = (p_seq > threshold) & (design.one_sided(tost) > alpha_eq)
            kept = np.vstack([kept, x[open_]])
            if len(kept) >= draws:
                break
        if len(kept) < draws:  # a row the design would almost never leave open: no selection
            kept = r["m"] + sp * rng.standard_normal((draws, n))
        kept = kept[:draws]
        tt, _, _ = _look_t(n1, kept[:, :n1].mean(axis=1), kept[:, :n1].std(axis=1, ddof=1), n,
                           kept.mean(axis=1), kept.std(axis=1, ddof=1))
        null += sps.norm.isf(sps.t.sf(tt, n - 2)) ** 2
    p = (int((null >= q_obs).sum()) + 1) / (draws + 1)
    return {"rows": k, "Q": q_obs, "df": k, "p": p, "p_chi2": float(sps.chi2.sf(q_obs, k)),
            "mean_shift": float(np.mean(shifts)), "draws": draws}
