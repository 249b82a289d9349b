"""Importers of real cluster logs (``shockwave-gym import-trace``; docs/TRACES.md, "Real
cluster traces").

One module per source format and one per shared concept:

* :mod:`~shockwave_gym.traces.importers.philly` - Microsoft Philly ``cluster_job_log``
  (read by :mod:`~shockwave_gym.traces.importers.jsonarray`, an incremental JSON-array reader);
* :mod:`~shockwave_gym.traces.importers.helios` - SenseTime Helios ``cluster_log.csv``;
* :mod:`~shockwave_gym.traces.importers.acme` - Shanghai AI Lab Acme ``trace_*.csv``;
* :mod:`~shockwave_gym.traces.importers.slurm` - the Slurm job-table rows both share (CSV,
  read by :mod:`~shockwave_gym.traces.importers.csvrows`);
* :mod:`~shockwave_gym.traces.importers.pai` - Alibaba PAI job and task tables;
* :mod:`~shockwave_gym.traces.importers.records` - what adapters hand on: logged jobs and
  row problems;
* :mod:`~shockwave_gym.traces.importers.mapping` - the rules from a logged job to trace jobs;
* :mod:`~shockwave_gym.traces.importers.rescale` - offered load, windows, load targets;
* :mod:`~shockwave_gym.traces.importers.convert` - the whole import.
"""

from shockwave_gym.traces.importers.convert import (
    FORMATS,
    ImportOptions,
    ImportSummary,
    import_trace,
)

__all__ = ["FORMATS", "ImportOptions", "ImportSummary", "import_trace"]
