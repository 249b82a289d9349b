"""The course's source notebooks (solutions marked) and ``instructor.json``, installed as the
data package ``shockwave_gym.course.sources`` so that ``shockwave-gym course build`` works
from an installed package (docs/COURSE.md)."""
