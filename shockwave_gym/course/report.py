"""The grade of one submission: criteria, each passed or not with its reason, and a score.

Two kinds of criteria:

* **rules** (0 points): the submission is valid (``check_agent`` accepts the agent on every
  trace, a function returns what it must, ...). A broken rule voids the task criteria: they
  score 0 with "not graded";
* **task** criteria (points): the lab's stated goal. Some are all-or-nothing ("on every case");
  others give credit per case (``met`` of ``total`` cases earn ``points * met / total``,
  rounded), so a nearly-right answer that misses one case of seven still shows its progress.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Criterion:
    """One line of a grade report."""

    name: str
    points: int
    passed: bool
    detail: str
    met: int | None = None
    total: int | None = None

    @property
    def rule(self) -> bool:
        return self.points == 0

    @property
    def earned(self) -> int:
        if self.met is not None and self.total:
            return round(self.points * self.met / self.total)
        return self.points if self.passed else 0


@dataclass
class GradeReport:
    """Per-criterion outcome of grading ``submission`` on ``lab``; ``cases`` names what it
    ran on (traces or instances), ``hidden`` says whether instructor-only cases were included."""

    lab: str
    submission: str
    cases: list[str]
    hidden: bool
    criteria: list[Criterion] = field(default_factory=list)

    def add(self, criterion: Criterion) -> None:
        self.criteria.append(criterion)

    def finish(self, task: tuple[tuple[str, int], ...] = ()) -> GradeReport:
        """Apply the rules (once, after every criterion is added);
        ``task`` lists the lab's task criteria as (name, points), so that those a broken rule
        kept from being measured still appear, with 0 points."""
        broken = [c.name for c in self.criteria if c.rule and not c.passed]
        measured = {c.name for c in self.criteria}
        for name, points in task:
            if name not in measured:
                self.add(Criterion(name, points, False, "not measured"))
        for criterion in self.criteria:
            if broken and not criterion.rule:
                criterion.passed, criterion.met = False, None
                criterion.detail = f"not graded: rule {broken[0]!r} is broken"
        return self

    @property
    def score(self) -> int:
        return sum(c.earned for c in self.criteria)

    @property
    def max_score(self) -> int:
        return sum(c.points for c in self.criteria)

    def text(self) -> str:
        scope = "public and instructor-only cases" if self.hidden else "public cases only"
        lines = [f"lab {self.lab}: {self.submission}", f"graded on {len(self.cases)} {scope}: {', '.join(self.cases)}"]
        for c in self.criteria:
            mark = "PASS" if c.passed else ("PART" if c.earned else "FAIL")
            points = "rule" if c.rule else f"{c.earned:>3}/{c.points}"
            lines.append(f"  [{mark}] {points:>7}  {c.name}: {c.detail}")
        unmet = [c.name for c in self.criteria if not c.rule and not c.passed]
        verdict = "task met" if not unmet else f"task not met ({', '.join(unmet)})"
        lines.append(f"score {self.score}/{self.max_score}: {verdict}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.update(score=self.score, max_score=self.max_score)
        return data


def per_case(name: str, points: int, met: dict[str, bool], goal: str, extra: str = "") -> Criterion:
    """A criterion credited per case: ``met`` maps each case to whether ``goal`` holds there."""
    missed = [case for case, ok in met.items() if not ok]
    detail = f"{goal}: met on {len(met) - len(missed)}/{len(met)} cases"
    if missed:
        detail += f" (missed: {', '.join(missed[:3])}{' ...' if len(missed) > 3 else ''})"
    if extra:
        detail += f"; {extra}"
    return Criterion(name, points, not missed, detail, met=len(met) - len(missed), total=len(met))
