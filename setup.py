"""Package discovery only; all metadata lives in pyproject.toml.

The agent package sits in ``agents/`` but installs as ``shockwave_agents`` (a bare
``agents`` import collides with other packages), which needs a ``package_dir`` mapping
that includes every sub-package.
"""

from setuptools import find_packages, setup

agent_packages = ["shockwave_agents"] + [
    f"shockwave_agents.{name}" for name in find_packages("agents")
]
setup(
    packages=find_packages(include=["shockwave_gym", "shockwave_gym.*"]) + agent_packages,
    package_dir={"shockwave_agents": "agents"},
)
