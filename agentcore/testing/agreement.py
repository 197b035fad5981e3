"""How far a judge agrees with people: raw agreement, Cohen's kappa with a 95% interval, the majority-class baseline,
the true-positive and true-negative rates, the confusion matrix; how far a judge agrees with itself; how far people
agree with each other (the ceiling a judge can reach). Pure arithmetic over labels, and the labels read off the library.

Cohen's kappa is (p_o - p_e) / (1 - p_e), p_o the share of items both raters put in the same category and p_e the
share expected by chance from each rater's own frequencies (Cohen 1960). Its interval is kappa ± 1.96 standard
errors, the standard error being the large-sample one of Fleiss, Cohen & Everitt (1969), "Large sample standard errors
of kappa and weighted kappa", Psychological Bulletin 72(5): 323-327, which SAS PROC FREQ prints as ASE:

    var = [ sum_i p_ii (1 - (p_i. + p_.i)(1 - k))^2 + (1 - k)^2 sum_{i!=j} p_ij (p_.i + p_j.)^2 - (k - p_e (1 - k))^2 ]
          / (n (1 - p_e)^2)

Over few items the interval is wide and said so; where both raters used one category alone, kappa is undefined.

On the library: an item is a step of a stored run. A person's label is a pass where it says `good`, a fail where it
carries a failure of the taxonomy, and says nothing otherwise (a score, a note, a free label); a judge's verdict
(author `judge:NAME`) is a pass (`good`), a fail (`fails the rubric`), or no verdict. The positive class is pass:
the true-positive rate is the share of people's passes the judge passed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from ..annotations import JUDGE_PREFIX, LABELS, Annotation, by_scanner

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
PASS, FAIL = True, False


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa, its asymptotic standard error (Fleiss, Cohen & Everitt 1969) and its 95% interval."""

    value: float
    se: float
    low: float
    high: float


def confusion(pairs: Iterable[tuple[Hashable, Hashable]], categories: Sequence[Hashable]) -> list[list[int]]:
    """The k×k table of (first rater, second rater) pairs: rows the first rater's category, columns the second's."""
    at = {c: i for i, c in enumerate(categories)}
    table = [[0] * len(categories) for _ in categories]
    for a, b in pairs:
        table[at[a]][at[b]] += 1
    return table


def cohen_kappa(table: Sequence[Sequence[float]]) -> Kappa | None:
    """Cohen's kappa of a k×k table of counts, with its 95% interval; None where it is undefined (no items, or
    chance agreement of 1: both raters used one and the same category alone)."""
    n = sum(map(sum, table))
    k = len(table)
    if n <= 0:
        return None
    p = [[cell / n for cell in row] for row in table]
    rows = [sum(row) for row in p]
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]
    observed = sum(p[i][i] for i in range(k))
    chance = sum(rows[i] * cols[i] for i in range(k))
    if math.isclose(chance, 1.0):
        return None
    kappa = (observed - chance) / (1 - chance)
    agree = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(k))
    disagree = (1 - kappa) ** 2 * sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j)
    variance = (agree + disagree - (kappa - chance * (1 - kappa)) ** 2) / (n * (1 - chance) ** 2)
    se = math.sqrt(max(variance, 0.0))
    return Kappa(kappa, se, kappa - Z95 * se, kappa + Z95 * se)


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True)
class BinaryAgreement:
    """Two raters' pass/fail labels on the same items: the reference's (people's) rows, the other's (a judge's)
    columns, pass first. Every rate comes with the counts it is made of."""

    tp: int  # both pass
    fn: int  # the reference passes, the other fails
    fp: int  # the reference fails, the other passes
    tn: int  # both fail

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> BinaryAgreement:
        (tp, fn), (fp, tn) = confusion(pairs, (PASS, FAIL))
        return cls(tp, fn, fp, tn)

    @property
    def n(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    @property
    def agree(self) -> int:
        return self.tp + self.tn

    @property
    def raw(self) -> float | None:
        """The share of items both raters labelled alike."""
        return _rate(self.agree, self.n)

    @property
    def kappa(self) -> Kappa | None:
        return cohen_kappa([[self.tp, self.fn], [self.fp, self.tn]])

    @property
    def majority(self) -> tuple[bool, int]:
        """The reference's more frequent label (pass on a tie) and how many items carry it."""
        passes, fails = self.tp + self.fn, self.fp + self.tn
        return (PASS, passes) if passes >= fails else (FAIL, fails)

    @property
    def baseline(self) -> float | None:
        """The raw agreement of a rater that always gives the reference's more frequent label."""
        return _rate(self.majority[1], self.n)

    @property
    def tpr(self) -> float | None:
        """Of the reference's passes, the share the other passed."""
        return _rate(self.tp, self.tp + self.fn)

    @property
    def tnr(self) -> float | None:
        """Of the reference's fails, the share the other failed."""
        return _rate(self.tn, self.tn + self.fp)

    def to_dict(self) -> dict[str, Any]:
        kappa = self.kappa
        return {
            "items": self.n,
            "agree": self.agree,
            "raw_agreement": self.raw,
            "kappa": None if kappa is None else kappa.value,
            "kappa_se": None if kappa is None else kappa.se,
            "kappa_95": None if kappa is None else [kappa.low, kappa.high],
            "majority_label": "pass" if self.majority[0] else "fail",
            "majority_count": self.majority[1],
            "majority_baseline": self.baseline,
            "tpr": self.tpr,
            "tp": self.tp,
            "reference_passes": self.tp + self.fn,
            "tnr": self.tnr,
            "tn": self.tn,
            "reference_fails": self.fp + self.tn,
            "confusion": {"rows": "reference pass, fail", "columns": "other pass, fail", "table": self.table},
        }

    @property
    def table(self) -> list[list[int]]:
        return [[self.tp, self.fn], [self.fp, self.tn]]


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f} ({part} of {whole})" if whole else f"- (0 of {whole})"


def majority_label(labels: Sequence[bool]) -> bool | None:
    """The label most of `labels` give; None on a tie."""
    counts = Counter(labels)
    if counts[PASS] == counts[FAIL]:
        return None
    return counts[PASS] > counts[FAIL]


# -- labels read off the library -----------------------------------------------------------------


def person_says(annotation: Annotation) -> bool | None:
    """A person's label as pass/fail: `good` passes, a failure of the taxonomy fails; else it says neither."""
    failures = [label for label in annotation.labels if label != "good" and label in LABELS]
    if failures and "good" not in annotation.labels:
        return FAIL
    if "good" in annotation.labels and not failures:
        return PASS
    return None


def judge_says(annotation: Annotation) -> bool | None:
    """A judge's verdict as pass/fail; None for no verdict."""
    if "good" in annotation.labels:
        return PASS
    if "fails the rubric" in annotation.tags:
        return FAIL
    return None


Item = tuple[str, int]  # (run id, step)


@dataclass
class JudgeReport:
    """A judge's verdicts beside a reference's labels on the same steps, its self-consistency, and people's agreement
    with each other: what `agentcore judge agreement` and the Error analysis page show."""

    judge: str
    labels: str
    agreement: BinaryAgreement
    judged: int = 0  # steps the judge gave a verdict on
    labelled: int = 0  # steps the reference labelled pass or fail
    no_verdict: int = 0  # steps the judge labelled with no verdict alone
    people_tied: int = 0  # steps both labelled where people split evenly: left out
    judge_tied: int = 0  # steps the judge judged alike as often each way: left out
    # steps the judge judged more than once: how many, how many alike every time, and agreeing pairs of verdicts
    repeated: int = 0
    unanimous: int = 0
    pairs_agree: int = 0
    pairs: int = 0
    # per pair of people, on the steps both labelled: (a, b, their agreement)
    between_people: list[tuple[str, str, BinaryAgreement]] = field(default_factory=list)
    # the steps the judge and the reference disagree on: (run id, step, reference, judge, the judge's run or None)
    disagreements: list[tuple[str, int, bool, bool, str | None]] = field(default_factory=list)

    def text(self) -> str:
        """The report in words and figures, counts beside every rate."""
        who = "people's labels" if self.labels == "people" else f"{self.labels}'s labels"
        a = self.agreement
        lines = [
            f"judge {self.judge} against {who}: {a.n} steps labelled pass or fail by both "
            f"(the judge gave a verdict on {self.judged}, {who} say pass or fail on {self.labelled})"
        ]
        if a.n == 0:
            lines.append(
                f"  nothing to compare: label steps good or with a failure (agentcore annotate), and judge them "
                f"(a judge check in agentcore test, or agentcore scan --scanner judge:{self.judge})"
            )
        else:
            kappa = a.kappa
            said = (
                "undefined: both gave one and the same label to every step"
                if kappa is None
                else f"{kappa.value:.3f}, 95% interval {kappa.low:.3f} to {kappa.high:.3f} "
                f"(standard error {kappa.se:.3f}, the asymptotic one of Fleiss, Cohen & Everitt 1969)"
            )
            label, count = a.majority
            word = "pass" if label else "fail"
            lines += [
                f"  raw agreement      {_share(a.agree, a.n)}",
                f"  Cohen's kappa      {said}",
                f"  majority baseline  {_share(count, a.n)}: {word} is the more frequent label; "
                f"a judge that always said {word} would agree this often",
                f"  TPR (pass)         {_share(a.tp, a.tp + a.fn)}: the steps labelled pass that the judge passed",
                f"  TNR (fail)         {_share(a.tn, a.tn + a.fp)}: the steps labelled fail that the judge failed",
                "  confusion           judge pass  judge fail",
                f"    labelled pass     {a.tp:>10}  {a.fn:>10}",
                f"    labelled fail     {a.fp:>10}  {a.tn:>10}",
            ]
        if self.no_verdict:
            lines.append(f"  no verdict on {self.no_verdict} steps (the judge's answer was malformed): left out")
        if self.people_tied or self.judge_tied:
            lines.append(
                f"  left out as ties: {self.people_tied} steps people split evenly on, "
                f"{self.judge_tied} the judge judged as often each way"
            )
        if self.repeated:
            lines.append(
                f"self-consistency: {self.repeated} steps judged more than once; {self.unanimous} of them alike every "
                f"time; {_share(self.pairs_agree, self.pairs)} pairs of verdicts on one step agree"
            )
        else:
            lines.append("self-consistency: no step judged more than once (scan again with --again to measure it)")
        if self.between_people:
            lines.append("between people (the ceiling a judge can reach):")
            for x, y, b in self.between_people:
                kappa = b.kappa
                k = "undefined" if kappa is None else f"{kappa.value:.3f} ({kappa.low:.3f} to {kappa.high:.3f})"
                lines.append(f"  {x} and {y} on {b.n} steps: raw {_share(b.agree, b.n)}, kappa {k}")
        else:
            lines.append("between people: no step labelled by more than one person")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "labels": self.labels,
            "kappa_interval": "kappa ± 1.96 × the asymptotic standard error of Fleiss, Cohen & Everitt (1969)",
            "positive_class": "pass",
            "judged": self.judged,
            "labelled": self.labelled,
            "no_verdict": self.no_verdict,
            "ties_left_out": {"people": self.people_tied, "judge": self.judge_tied},
            **self.agreement.to_dict(),
            "self_consistency": {
                "steps_judged_more_than_once": self.repeated,
                "alike_every_time": self.unanimous,
                "pairs_agree": self.pairs_agree,
                "pairs": self.pairs,
                "pair_agreement": _rate(self.pairs_agree, self.pairs),
            },
            "between_people": [{"a": x, "b": y, **b.to_dict()} for x, y, b in self.between_people],
            "disagreements": [
                {
                    "run_id": r,
                    "step": s,
                    "labelled": "pass" if p else "fail",
                    "judge": "pass" if j else "fail",
                    "judge_run": jr,
                }
                for r, s, p, j, jr in self.disagreements
            ],  # fmt: skip
        }


def judge_report(labelled: Mapping[str, list[Annotation]], judge: str, labels: str = "people") -> JudgeReport:
    """The report of judge `judge` (its name, `judge:` optional) against `labels` ("people", or one person's name)
    over the annotations of the runs (run id: its annotations, oldest first, as Store.annotations_by_run gives)."""
    judge = judge.removeprefix(JUDGE_PREFIX)
    author = JUDGE_PREFIX + judge
    verdicts: dict[Item, list[tuple[bool | None, str | None]]] = {}
    everyone: dict[Item, dict[str, bool]] = {}
    for run_id, found in labelled.items():
        for a in found:
            item = (run_id, a.step)
            if a.author == author:
                verdicts.setdefault(item, []).append((judge_says(a), a.judge_run))
            elif not by_scanner(a) and (said := person_says(a)) is not None:
                everyone.setdefault(item, {})[a.author or "unknown"] = said  # a person's latest label counts
    people = everyone if labels == "people" else {i: {labels: d[labels]} for i, d in everyone.items() if labels in d}
    report = JudgeReport(judge, labels, BinaryAgreement(0, 0, 0, 0))
    judged: dict[Item, tuple[bool, str | None]] = {}
    for item, said in verdicts.items():
        given = [v for v, _ in said if v is not None]
        if not given:
            report.no_verdict += 1
            continue
        report.judged += 1
        if len(given) > 1:
            report.repeated += 1
            report.unanimous += len(set(given)) == 1
            for x, y in combinations(given, 2):
                report.pairs += 1
                report.pairs_agree += x == y
        verdict = majority_label(given) if len(given) > 1 else given[0]
        run = next((r for v, r in reversed(said) if v == verdict), None)
        if verdict is None:
            report.judge_tied += 1
            continue
        judged[item] = (verdict, run)
    pairs = []
    for item, by_person in people.items():
        report.labelled += 1
        if item not in judged:
            continue
        reference = majority_label(list(by_person.values()))
        if reference is None:
            report.people_tied += 1
            continue
        verdict, run = judged[item]
        pairs.append((reference, verdict))
        if reference != verdict:
            report.disagreements.append((*item, reference, verdict, run))
    report.agreement = BinaryAgreement.of(pairs)
    raters = sorted({p for by_person in everyone.values() for p in by_person})
    for x, y in combinations(raters, 2):
        both = [(d[x], d[y]) for d in everyone.values() if x in d and y in d]
        if both:
            report.between_people.append((x, y, BinaryAgreement.of(both)))
    return report
