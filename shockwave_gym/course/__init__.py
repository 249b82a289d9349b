"""The teaching kit: labs in order, student and instructor versions from one source, and a
grader that grades each lab's stated task (docs/COURSE.md).

* :mod:`~shockwave_gym.course.labs` - the labs and what each submission defines;
* :mod:`~shockwave_gym.course.markers` / :mod:`~shockwave_gym.course.notebook` - solution
  markers, and a notebook in its student and instructor versions;
* :mod:`~shockwave_gym.course.build` - :func:`build_kit`;
* :mod:`~shockwave_gym.course.submission` - reading a ``.py`` or ``.ipynb`` submission;
* :mod:`~shockwave_gym.course.isolation` - running one in a fresh child process with limits;
  :mod:`~shockwave_gym.course.child` is that process (it hands back answers, never scores) and
  :mod:`~shockwave_gym.course.guard` what it keeps from a submission;
* :mod:`~shockwave_gym.course.grade` - :func:`grade_isolated` (a class's submissions),
  :func:`grade_object` (in-process, for a notebook's self-check);
* :mod:`~shockwave_gym.course.report` - criteria and scores;
* ``lab_adaptation``, ``lab_fairness``, ``lab_markets`` - each lab's cases and criteria.

Like :mod:`shockwave_gym.testing`, it plays agents on the core (with ``check_agent``) and
may import the agents for baselines; it never imports the env, training, harness or CLI.
"""

from shockwave_gym.course.build import build_kit
from shockwave_gym.course.grade import grade_isolated, grade_object, grade_submission
from shockwave_gym.course.labs import LABS, get_lab

__all__ = ["LABS", "build_kit", "get_lab", "grade_isolated", "grade_object", "grade_submission"]
