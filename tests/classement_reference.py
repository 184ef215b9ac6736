"""The classement's comparisons recomputed from the demandes themselves, apart from
``domain/``: the rules of ADR-0081 written again with ``statistics`` on exact fractions and
``scipy.stats`` (a test-only reference), and what a demande adds to its group's sample
(``sample_sums``, ADR-0073). Used by the unit, property and integration tests.

ALPHA is ADR-0081's family-wise 1 %; a group at most half the other's size has its spread
floored at the other's; a pair held back or without spread is judged last."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from scipy import stats

Rows = Sequence[tuple[int, int, int]]  # (evites, pilotage, corrections) per demande
SessionRows = Sequence[tuple[Any, int, int, int]]
"""``(cluster, evites, pilotage, corrections)``: the cluster a session's demandes of one day
(ADR-0167), any hashable key."""
ALPHA = 0.01


def sample_sums(delegations: int, evites: int, pilotage: int, corrections: int
                ) -> tuple[int, ...]:
    """What one demande with these figures (tokens) adds to its group's sample, in the
    view's column order (``demandes``, the three figures, e², c², e·c, net²): nothing
    before its delegation has arrived (SPEC: "the unit is a demande whose delegation has
    arrived")."""
    if delegations <= 0:
        return (0,) * 8
    net = evites - pilotage - corrections
    return (1, evites, pilotage, corrections, evites ** 2, corrections ** 2,
            evites * corrections, net ** 2)


def unit(rows: Rows, selon: str) -> tuple[float, float]:
    """A group's figure and the variance of one demande's part in it, the demandes taken
    as independent."""
    if selon == "net":
        nets = [Fraction(e - p - c) for e, p, c in rows]
        return float(statistics.mean(nets)), float(statistics.variance(nets))
    ratio = Fraction(sum(r[2] for r in rows), sum(r[0] for r in rows))
    z = [c - ratio * e for e, _, c in rows]
    mean_e = statistics.mean(Fraction(r[0]) for r in rows)
    return float(ratio), float(statistics.variance(z) / (mean_e * mean_e))


def by_session(rows: SessionRows) -> list[Rows]:
    """The demandes ``(session, evites, pilotage, corrections)`` grouped by session."""
    sessions: dict[Any, list[tuple[int, int, int]]] = {}
    for session, e, p, c in rows:
        sessions.setdefault(session, []).append((e, p, c))
    return list(sessions.values())


def clustered(rows: SessionRows, selon: str) -> tuple[float, Fraction, int]:
    """A group's figure, the variance of that figure and its number of sessions S
    (ADR-0166, written again): over sessions, the linearised totals
    u_s = net_s - μ·n_s (net) or C_s - R·E_s (taux), S/(S - 1)·Σu_s²/T² with T the
    demandes (net) or the evites (taux), for the net at least Σu_s²·(1 + n_s/(n - 1))/n²
    (ADR-0175); never below the per-demande variance."""
    flat = [(e, p, c) for _, e, p, c in rows]
    sessions = by_session(rows)
    s, n = len(sessions), len(flat)
    figure, per_demande = unit(flat, selon)
    if selon == "net":
        mu = Fraction(sum(e - p - c for e, p, c in flat), n)
        u = [sum(e - p - c for e, p, c in rs) - mu * len(rs) for rs in sessions]
        total = Fraction(n)
    else:
        total = Fraction(sum(e for e, _, _ in flat))
        ratio = Fraction(sum(c for _, _, c in flat)) / total
        u = [sum(c for _, _, c in rs) - ratio * sum(e for e, _, _ in rs) for rs in sessions]
    per_session = Fraction(s, s - 1) * sum(x * x for x in u) / (total * total)
    if selon == "net":  # each session's leverage n_s/n, to first order (ADR-0175)
        leveraged = sum(x * x * (1 + Fraction(len(rs), n - 1)) for x, rs in
                        zip(u, sessions, strict=True)) / (total * total)
        per_session = max(per_session, leveraged)
    return figure, max(per_session, Fraction(per_demande) / n), s


def effective_sessions(rows: SessionRows) -> float:
    """Kish's effective number of sessions of a group, n²/Σn_s² over its sessions'
    demandes n_s (ADR-0171, written again)."""
    sizes = [len(rs) for rs in by_session(rows)]
    return sum(sizes) ** 2 / sum(x * x for x in sizes)


def net_df(rows: SessionRows) -> int:
    """The degrees of freedom of a group's mean net: its effective sessions less one,
    rounded down, at least 1 (ADR-0171)."""
    return max(1, math.floor(effective_sessions(rows) - 1))


def _a_completer(pair: dict[str, Any], level: float) -> dict[str, int] | None:
    """More demandes for the observed difference to be told at ``level``, written again:
    the smallest factor k on both groups' data (by bisection) with
    t(level; floor(df·k))·se/√k <= |difference|."""
    d, se, df = pair["difference"], pair["se"], pair["df"]
    k_min = pair.get("k_min", 1.0)
    if pair["short"] or d is None or d == 0 or se <= 0 or k_min is None:
        return None

    def told(k: float) -> bool:
        return bool(stats.t.ppf(level, max(1, math.floor(df * k))) * se / math.sqrt(k)
                    <= abs(d))

    low = high = max(1.0, k_min)
    while not told(high):
        low, high = high, high * 2
        if high > 1e6:
            return None
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (low, middle) if told(middle) else (middle, high)
    na, nb = pair["sizes"]
    return {"a": math.ceil(na * (high - 1)), "b": math.ceil(nb * (high - 1))}


def _effective(corrections: Sequence[float]) -> float:
    """Kish's effective count of ``corrections``: (Σc)²/Σc², 0 without any."""
    total = sum(corrections)
    return float(total * total / sum(c * c for c in corrections)) if total else 0.0


def _taux_hold(cle: str, corrections: Sequence[float], suffix: str = "") -> str | None:
    total = sum(corrections)
    if total == 0:
        return f"no correction yet in {cle}{suffix}"
    if Fraction(total) ** 2 / sum(Fraction(c) ** 2 for c in corrections) < 3:
        return (f"too few corrections in {cle}{suffix} to bound its taux_reprise "
                "(fewer than 3 equal ones)")
    return None


def _holm(pairs: list[dict[str, Any]], selon: str) -> list[dict[str, Any]]:
    """Each pair: a, b, difference, se, df, hold, open (low, high), floor (se, df) or None,
    note, taches. Holm over the p-values; intervals at each step's level; verdicts."""
    for pair in pairs:
        if pair["hold"] is not None or pair["short"]:
            pair["p"] = 1.0
    k_stop = None
    for step, pair in enumerate(sorted(pairs, key=lambda p: p["p"])):
        k = len(pairs) - step if k_stop is None else k_stop
        level = 1 - ALPHA / (2 * k)

        def bounds(se: float, df: int, pair: dict[str, Any] = pair,
                   level: float = level) -> tuple[float, float] | None:
            if pair["difference"] is None or pair["short"]:
                return None
            half = stats.t.ppf(level, df) * se
            return pair["difference"] - half, pair["difference"] + half

        got = bounds(pair["se"], pair["df"])
        separated = k_stop is None and got is not None and (got[0] > 0 or got[1] < 0)
        if k_stop is None and not separated:
            k_stop = k
        verdict, raison = "indiscernable", pair["hold"]
        if separated and raison is None:
            assert got is not None
            ahead = got[0] > 0 if selon == "net" else got[1] < 0
            verdict = "a_devant" if ahead else "b_devant"
        elif raison is None and pair["floor"] is not None:
            unfloored = bounds(*pair["floor"])
            if unfloored is not None and (unfloored[0] > 0 or unfloored[1] < 0):
                raison = pair["note"]
        interval = None if got is None else [None if pair["open"][0] else got[0],
                                            None if pair["open"][1] else got[1]]
        pair["answer"] = {"a": pair["a"], "b": pair["b"], "difference": pair["difference"],
                          "intervalle": interval, "verdict": verdict, "raison": raison,
                          **({} if pair["taches"] is None else {"taches": pair["taches"]})}
        if verdict == "indiscernable":
            pair["answer"]["a_completer"] = _a_completer(pair, level)
    return [p["answer"] for p in pairs]


def expected_pairs(groups: Mapping[str, SessionRows], selon: str,
                   unclustered: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The ``comparaisons`` of ``groups`` (in rank order; each demande with its session)
    on ``selon``: Welch on the variances over sessions with degrees of freedom from the
    sessions, the group of at most half the other's sessions floored at the other's
    spread per demande, the taux holds (effective corrections counted over sessions), a
    pair with a group of ``unclustered`` held back (its sessions are not kept), Holm."""
    # A group whose sessions are not kept is served as independent demandes.
    groups = {cle: [(f"{cle}:{i}", *r[1:]) for i, r in enumerate(rows)]
              if cle in unclustered else rows for cle, rows in groups.items()}
    names = list(groups)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            sizes = {cle: len(by_session(groups[cle])) for cle in (a, b)}
            if a in unclustered or b in unclustered:
                held = a if a in unclustered else b
                xa, xb = (unit([r[1:] for r in groups[cle]] * 2, selon)[0] for cle in (a, b))
                pairs.append({"a": a, "b": b, "difference": xa - xb, "se": 0.0, "df": 1,
                              "p": 1.0, "hold": f"{held}: its demandes' sessions are not "
                                                "kept: no claim on it (ADR-0166)",
                              "open": [False, False], "floor": None, "short": True,
                              "taches": None, "note": None})
                continue
            if min(sizes.values()) < 2:
                small = a if sizes[a] < sizes[b] else b
                xa, xb = (unit([r[1:] for r in groups[cle]] * 2, selon)[0] for cle in (a, b))
                pairs.append({"a": a, "b": b, "difference": xa - xb, "se": 0.0, "df": 1,
                              "p": 1.0, "hold": f"fewer than 2 sessions in {small}",
                              "open": [False, False], "floor": None, "short": True,
                              "taches": None, "note": None})
                continue
            xa, va, ka = clustered(groups[a], selon)
            xb, vb, kb = clustered(groups[b], selon)
            na, nb = len(groups[a]), len(groups[b])
            small = a if ka < kb else b
            floor = None
            # The net's degrees of freedom count Kish's effective sessions (ADR-0171).
            da, db = ((effective_sessions(groups[a]), effective_sessions(groups[b]))
                      if selon == "net" else (ka, kb))
            welch = _welch(float(va), da, float(vb), db)
            unequal = max(ka, kb) >= 2 * min(ka, kb)
            if unequal and ka < kb and va * na < vb * nb:
                floor, welch = welch, _welch(float(vb * nb / na), da, float(vb), db)
            elif unequal and kb < ka and vb * nb < va * na:
                floor, welch = welch, _welch(float(va), da, float(va * na / nb), db)
            note = (f"unequal sizes: {small} has {{size}}, too few to know its spread"
                    if unequal else None)
            if not unequal and selon == "net" and va * na != vb * nb:
                # Skewed nets: the spread per demande of the two is the larger's (ADR-0175).
                low, high = (a, b) if va * na < vb * nb else (b, a)
                note = (f"{low}'s net varies less than {high}'s: on skewed data a group "
                        "that has not met its rare large values yet underestimates its "
                        "spread")
                floor, welch = welch, (_welch(float(vb * nb / na), da, float(vb), db)
                                       if low == a else
                                       _welch(float(va), da, float(va * na / nb), db))
            se, df = welch
            hold = None if se > 0 else "no spread to judge by yet"
            open_ = [False, False]
            k_min: float | None = 1.0
            if selon == "net" and se > 0 and min(da, db) < 8:
                few, cle = (da, a) if da <= db else (db, b)
                hold = (f"too few sessions in {cle} to judge its net: as uneven as about "
                        f"{few:.1f} equal ones, fewer than 8")
                k_min = 8 / few
            if selon == "taux" and se > 0:
                effectives = []
                for cle, side in ((a, 1), (b, 0)):
                    corrections = [sum(r[2] for r in rs) for rs in by_session(groups[cle])]
                    hold = hold or _taux_hold(cle, corrections)
                    open_[side] = open_[side] or sum(corrections) == 0
                    effectives.append(_effective(corrections))
                k_min = 3 / min(effectives) if min(effectives) > 0 else None
            n_small, k_small = (na, ka) if small == a else (nb, kb)
            n_large, k_large = (nb, kb) if small == a else (na, ka)
            size = (f"{n_small:,} demandes against {n_large:,}"
                    if (n_small, n_large) == (k_small, k_large) else
                    f"{n_small:,} demandes in {k_small:,} sessions against {k_large:,} "
                    "sessions")
            pairs.append({"a": a, "b": b, "difference": xa - xb, "se": se, "df": df,
                          "p": _p(xa - xb, se, df), "hold": hold, "open": open_,
                          "floor": floor, "short": se == 0, "taches": None,
                          "sizes": (na, nb), "k_min": k_min,
                          "note": note and note.replace("{size}", size)})
    return _holm(pairs, selon)


def independent(groups: Mapping[str, Rows]) -> dict[str, SessionRows]:
    """``groups`` of demandes given without sessions, each demande a session of its own."""
    return {cle: [(f"{cle}:{i}", *row) for i, row in enumerate(rows)]
            for cle, rows in groups.items()}


def expected_paired(tasks: Mapping[str, Mapping[str, Rows]], ranked: Sequence[str],
                    selon: str) -> list[dict[str, Any]]:
    """The paired ``comparaisons``: ``tasks[group][task]`` the demandes of a group on a
    task; per-task means, paired differences over the common tasks, Holm."""
    pairs = []
    for i, a in enumerate(ranked):
        for b in ranked[i + 1:]:
            common = sorted(tasks.get(a, {}).keys() & tasks.get(b, {}).keys())
            mean = {g: [[statistics.fmean(r[k] for r in tasks[g][t]) for k in range(3)]
                        for t in common] for g in (a, b)}
            pair: dict[str, Any] = {"a": a, "b": b, "taches": len(common), "floor": None,
                                    "sizes": (len(common), len(common)),
                                    "hold": None, "open": [False, False],
                                    "short": len(common) < 2, "note": None}
            if not common:
                pair.update(difference=None, se=0.0, df=1, p=1.0, hold="no common task")
            elif selon == "net":
                d = [(x[0] - x[1] - x[2]) - (y[0] - y[1] - y[2])
                     for x, y in zip(mean[a], mean[b], strict=True)]
                pair.update(difference=statistics.fmean(d), **_paired_se(d))
            elif min(sum(x[0] for x in mean[g]) for g in (a, b)) <= 0:
                pair.update(difference=None, se=0.0, df=1, p=1.0, short=True,
                            hold="evites not above 0 on the common tasks")
            else:
                r = {g: sum(x[2] for x in mean[g]) / sum(x[0] for x in mean[g]) for g in (a, b)}
                e = {g: statistics.fmean(x[0] for x in mean[g]) for g in (a, b)}
                d = [(x[2] - r[a] * x[0]) / e[a] - (y[2] - r[b] * y[0]) / e[b]
                     for x, y in zip(mean[a], mean[b], strict=True)]
                pair.update(difference=r[a] - r[b], **_paired_se(d))
                sides = () if pair["se"] == 0 or pair["short"] else ((a, 1), (b, 0))
                effectives = []
                for cle, side in sides:
                    corrections = [x[2] for x in mean[cle]]
                    pair["hold"] = pair["hold"] or _taux_hold(cle, corrections,
                                                              " on the common tasks")
                    pair["open"][side] |= sum(corrections) == 0
                    effectives.append(_effective(corrections))
                if effectives:
                    pair["k_min"] = (3 / min(effectives) if min(effectives) > 0
                                     else None)
            if len(common) == 1:
                pair["hold"] = "fewer than 2 common tasks"
            elif common and pair["se"] == 0 and pair["difference"] is not None:
                pair["hold"], pair["short"] = "no spread to judge by yet", True
            pairs.append(pair)
    return _holm(pairs, selon)


def _paired_se(d: Sequence[float]) -> dict[str, Any]:
    if len(d) < 2:
        return {"se": 0.0, "df": 1, "p": 1.0}
    se = statistics.stdev(d) / math.sqrt(len(d))
    return {"se": se, "df": len(d) - 1, "p": _p(statistics.fmean(d), se, len(d) - 1)}


def _welch(va: float, na: float, vb: float, nb: float) -> tuple[float, int]:
    if va + vb == 0:
        return 0.0, max(1, math.floor(na + nb - 2))
    df = (va + vb) ** 2 / (va ** 2 / max(na - 1, 1e-9) + vb ** 2 / max(nb - 1, 1e-9))
    return math.sqrt(va + vb), max(1, math.floor(df + 1e-9))


def _p(difference: float, se: float, df: int) -> float:
    if se == 0:
        return 0.0 if difference else 1.0
    return float(2 * stats.t.sf(abs(difference) / se, df))


def assert_same(got: Sequence[Mapping[str, Any]], want: Sequence[Mapping[str, Any]]
                ) -> None:
    """``got`` comparaisons equal ``want``: every field, the floats to 1e-9 relative, a
    missing bound where and only where the other misses it."""
    approximate = ("difference", "intervalle", "a_completer")
    assert [{k: v for k, v in c.items() if k not in approximate}
            for c in got] == [{k: v for k, v in w.items()
                               if k not in approximate} for w in want]
    for c, w in zip(got, want, strict=True):
        # Two solvers of one equation (a fixed point, a bisection): within 1 %.
        assert ("a_completer" in c) == ("a_completer" in w), (c, w)
        mine_more, their_more = c.get("a_completer"), w.get("a_completer")
        assert (mine_more is None) == (their_more is None), (c, w)
        for side in () if mine_more is None else ("a", "b"):
            assert math.isclose(mine_more[side], their_more[side], rel_tol=0.01,
                                abs_tol=2), (c, w)
        for mine, theirs in ((c["difference"], w["difference"]),
                             *zip(c["intervalle"] or (), w["intervalle"] or (), strict=True)):
            assert (mine is None) == (theirs is None), (c, w)
            assert mine is None or math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-9), (
                c, w)
        assert (c["intervalle"] is None) == (w["intervalle"] is None), (c, w)
