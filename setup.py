"""Package discovery only; all metadata lives in pyproject.toml.

The agent package sits in ``agents/`` but installs as ``shockwave_agents`` (a bare
``agents`` import collides with other packages), which needs a ``package_dir`` mapping
that includes every sub-package. Likewise the bundled traces sit in ``traces/`` and install
as the data package ``shockwave_gym.bundled_traces``, and the course's source notebooks sit in
``notebooks/course/`` and install as ``shockwave_gym.course.sources``.
"""

from setuptools import find_packages, setup

agent_packages = ["shockwave_agents"] + [
    f"shockwave_agents.{name}" for name in find_packages("agents")
]
setup(
    packages=find_packages(include=["shockwave_gym", "shockwave_gym.*"])
    + agent_packages
    + ["shockwave_gym.bundled_traces", "shockwave_gym.course.sources"],
    package_dir={"shockwave_agents": "agents", "shockwave_gym.bundled_traces": "traces",
                 "shockwave_gym.course.sources": "notebooks/course"},
    # all package data lives here: a pyproject [tool.setuptools.package-data] table would
    # replace this argument rather than merge with it
    package_data={
        "shockwave_gym": ["data/*"],
        "shockwave_agents": ["pretrained/*"],
        "shockwave_gym.bundled_traces": ["*.jsonl", "*.trace", "README.md"],
        "shockwave_gym.course.sources": ["*.ipynb", "instructor.json"],
    },
)
