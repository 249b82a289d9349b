"""The course's labs, in order: what each grades, and what a submission must define.

=====  ============  ====================================  ==============================
 lab    key           notebook (``notebooks/course/``)      the submission defines
=====  ============  ====================================  ==============================
 1      adaptation    ``lab1_adaptation.ipynb``              ``remaining_time_estimate(view)``
 2      fairness      ``lab2_fairness.ipynb``                ``class MyAgent(Agent)``
 3      markets       ``lab3_markets.ipynb``                 ``nsw_allocation(instance)``
=====  ============  ====================================  ==============================
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from shockwave_gym.course import lab_adaptation, lab_fairness, lab_markets
from shockwave_gym.errors import InputError


@dataclass(frozen=True)
class Lab:
    number: int
    key: str
    title: str
    notebook: str
    entry: str
    kind: str
    module: ModuleType

    @property
    def task(self) -> tuple[tuple[str, int], ...]:
        return self.module.TASK


LABS = (
    Lab(1, "adaptation", "Dynamic adaptation and remaining-time prediction", "lab1_adaptation.ipynb",
        "remaining_time_estimate", "a function", lab_adaptation),
    Lab(2, "fairness", "Finish-time fairness and a fair scheduler", "lab2_fairness.ipynb",
        "MyAgent", "an Agent class", lab_fairness),
    Lab(3, "markets", "Markets: Nash social welfare against utilitarian and max-min", "lab3_markets.ipynb",
        "nsw_allocation", "a function", lab_markets),
)


def get_lab(name: str | int) -> Lab:
    """The lab by key (``"fairness"``) or number (``2``, ``"2"``)."""
    for lab in LABS:
        if str(name) in (lab.key, str(lab.number)):
            return lab
    choices = ", ".join(f"{lab.number} ({lab.key})" for lab in LABS)
    raise InputError(f"LAB: no lab {name!r}; the labs are {choices}")
