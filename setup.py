"""Package discovery only; all metadata lives in pyproject.toml.

The agent package sits in ``agents/`` but installs as ``shockwave_agents`` (a bare
``agents`` import collides with other packages), which needs a ``package_dir`` mapping
that includes every sub-package. Likewise the bundled traces sit in ``traces/`` and install
as the data package ``shockwave_gym.bundled_traces``.
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

BUNDLED_TRACE_DATA = {"shockwave_gym.bundled_traces": ["*.jsonl", "*.trace", "README.md"]}


class BuildPyWithTraces(build_py):
    """Adds the bundled traces to the package data.

    pyproject.toml's ``[tool.setuptools.package-data]`` table replaces (does not merge
    with) a ``package_data`` argument to ``setup()``, so the entry is added here.
    """

    def finalize_options(self):
        super().finalize_options()
        self.package_data = {**self.package_data, **BUNDLED_TRACE_DATA}


agent_packages = ["shockwave_agents"] + [
    f"shockwave_agents.{name}" for name in find_packages("agents")
]
setup(
    packages=find_packages(include=["shockwave_gym", "shockwave_gym.*"])
    + agent_packages
    + ["shockwave_gym.bundled_traces"],
    package_dir={"shockwave_agents": "agents", "shockwave_gym.bundled_traces": "traces"},
    cmdclass={"build_py": BuildPyWithTraces},
)
