"""Write the real-trace fixtures: small files in each dataset's published format.

The rows are ours (drawn from a seeded generator, no dataset's data): every status, jobs
above 8 GPUs, fractional PAI GPUs, CPU-only and non-training rows, and malformed rows whose
problems the tests expect by line and field. Regenerate the bundled fixtures with::

    python scripts/real_trace_fixtures.py tests/data/real_traces

and a large synthetic Philly log (for the memory figure in docs/TRACES.md) with::

    python scripts/real_trace_fixtures.py /tmp/philly-1m --philly-jobs 1000000
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2020, 4, 1, 8, 0, 0)
GPU_CYCLE = (1, 2, 4, 8, 1, 1, 2, 3, 16, 12, 64, 1, 4, 6, 2, 1, 8, 24)


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _jobs(n: int, statuses: tuple[str, ...], seed: int):
    """``n`` (index, submit, start, end, gpus, status) rows, submissions 0-20 min apart."""
    rng = random.Random(seed)
    submit = START
    for i in range(n):
        submit += timedelta(seconds=rng.randint(0, 1200))
        start = submit + timedelta(seconds=rng.randint(0, 600))
        run = int(60 * 10 ** rng.uniform(0, 3))  # 1 min to about 17 h
        yield i, submit, start, start + timedelta(seconds=run), GPU_CYCLE[i % len(GPU_CYCLE)], statuses[i % len(statuses)]


def philly_objects(n: int, seed: int = 1):
    users, vcs = ("u01", "u02", "u03"), ("vc-a", "vc-b")
    for i, submit, start, end, gpus, status in _jobs(n, ("Pass", "Killed", "Failed", "Pass"), seed):
        detail = []
        left, node = gpus, 0
        while left:
            take = min(8, left)
            detail.append({"ip": f"m{node}", "gpus": [f"gpu{g}" for g in range(take)]})
            left, node = left - take, node + 1
        attempts = [{"start_time": _stamp(start), "end_time": _stamp(end), "detail": detail}]
        if i % 11 == 9:  # an attempt with no recorded start (a logging gap), then the last one
            attempts = [{"start_time": None, "end_time": _stamp(start), "detail": detail}, *attempts]
        if i % 7 == 3:  # a retried job: a short first attempt, then the last one
            first_end = start + timedelta(seconds=30)
            attempts = [{"start_time": _stamp(start), "end_time": _stamp(first_end), "detail": detail},
                        {"start_time": _stamp(first_end + timedelta(seconds=5)),
                         "end_time": _stamp(end + timedelta(seconds=35)), "detail": detail}]
        yield {"status": status, "vc": vcs[i % 2], "jobid": f"application_{1506638472019 + seed}_{i:05d}",
               "attempts": attempts, "submitted_time": _stamp(submit), "user": users[i % 3]}


PHILLY_BAD = [
    {"status": "Pass", "vc": "vc-a", "jobid": "application_bad_1", "attempts": [],
     "submitted_time": "2020-04-01 09:00:00", "user": "u01"},                              # never ran
    {"status": "Passed", "vc": "vc-a", "jobid": "application_bad_2", "attempts": [],
     "submitted_time": "2020-04-01 09:00:00", "user": "u01"},                              # status
    {"status": "Killed", "vc": "vc-b", "jobid": "application_bad_3", "attempts": [
        {"start_time": "2020-04-01 09:10:00", "end_time": None, "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}],
     "submitted_time": "2020-04-01 09:05:00", "user": "u02"},                              # no end
    {"status": "Pass", "vc": "vc-b", "jobid": "application_bad_4", "attempts": [
        {"start_time": "2020-04-01 09:10:00", "end_time": "2020-04-01 10:00:00", "detail": [{"ip": "m1", "gpus": 2}]}],
     "submitted_time": "2020-04-01 09:05:00", "user": "u02"},                              # gpus not a list
    {"status": "Failed", "vc": "vc-a", "jobid": "application_bad_5", "attempts": [
        {"start_time": "2020-04-01 09:10:00", "end_time": "2020-04-01 10:00:00", "detail": [{"ip": "m1", "gpus": ["g0"]}]}],
     "submitted_time": "April 1st", "user": "u03"},                                        # submitted_time
    {"status": "Pass", "vc": "vc-a", "attempts": [], "submitted_time": "2020-04-01 09:00:00", "user": "u03"},  # no jobid
]


def write_philly(path: Path, n: int, with_bad: bool = True) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write("[\n")
        bad = list(PHILLY_BAD) if with_bad else []
        for i, obj in enumerate(philly_objects(n)):
            out.write((",\n" if i else "") + json.dumps(obj))
            if bad and i % 6 == 5:
                out.write(",\n" + json.dumps(bad.pop(0)))
        out.write("\n]\n")


SLURM_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "COMPLETED")


def write_helios(path: Path) -> None:
    header = ["job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
              "submit_time", "start_time", "end_time", "duration", "queue"]
    rows = []
    for i, submit, start, end, gpus, state in _jobs(32, SLURM_STATES, 2):
        run = int((end - start).total_seconds())
        rows.append([f"{400000 + i}", f"u{i % 5:02d}", f"vc{i % 3}", gpus, 4 * gpus, max(1, gpus // 8), state,
                     _stamp(submit), _stamp(start), _stamp(end), run, 0])
    rows[3][3] = 0  # a CPU-only job: filtered and counted
    rows.insert(6, ["400900", "u01", "vc0", 2, 8, 1, "RUNNING", "2020-04-01 09:00:00",
                    "2020-04-01 09:01:00", "2020-04-01 10:01:00", 3600, 0])     # state
    rows.insert(9, ["400901", "u01", "vc0", "two", 8, 1, "COMPLETED", "2020-04-01 09:00:00",
                    "2020-04-01 09:01:00", "2020-04-01 10:01:00", 3600, 0])     # gpu_num
    rows.insert(12, ["400902", "u02", "vc1", 4, 8, 1, "CANCELLED", "2020-04-01 09:00:00",
                     "", "", 0, 0])                                              # never ran
    rows.insert(15, ["400903", "u02", "vc1", 4, 8, 1, "COMPLETED", "2020-04-01 09:00:00",
                     "2020-04-01 09:01:00", "2020-04-01 10:01:00", 99, 0])      # duration
    rows.insert(18, ["400904", "u03", "vc2", 1, 8, 1, "FAILED", "2020-04-01 09:00:00",
                     "2020-04-01 08:59:00", "2020-04-01 10:01:00", 3720, 0])    # start before submit
    rows.insert(21, ["400905", "u03", "vc2", 1, 8, 1])                          # short row
    _write_csv(path, header, rows)


def _tz(t: datetime) -> str:
    return _stamp(t) + "+00:00"


def write_acme(path: Path) -> None:
    """Kalos columns (Seren has no mem, shared_mem, fail_time and stop_time columns)."""
    header = ["job_id", "user", "node_num", "gpu_num", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod",
              "type", "state", "submit_time", "start_time", "end_time", "fail_time", "stop_time",
              "duration", "queue", "gpu_time"]
    rows = []
    for i, submit, start, end, gpus, state in _jobs(32, SLURM_STATES, 3):
        gpus = gpus * 2 if gpus >= 8 else gpus  # many large jobs
        run = int((end - start).total_seconds())
        fail = _tz(start + timedelta(seconds=run // 2)) if state in ("FAILED", "NODE_FAIL") and i % 4 == 0 else ""
        stop = _tz(end) if state == "CANCELLED" else ""
        rows.append([f"dlc{900000 + i:x}", f"user{i % 4}", max(1, gpus // 8), gpus, 8 * gpus, 1000, 100.0,
                     ("Pretrain", "SFT", "Evaluation", "Debug")[i % 4], state,
                     _tz(submit), _tz(start), _tz(end), fail, stop, run, int((start - submit).total_seconds()),
                     float(run * gpus)])
    rows[5][3] = 0  # CPU-only

    def bad(job_id, gpus, state, submit, start, end, fail=""):
        return [job_id, "user1", 1, gpus, 64, 1000, 100.0, "SFT", state, submit, start, end, fail, "", 3600, 60, 0.0]

    t0, t1, t2 = "2020-04-01 09:00:00+00:00", "2020-04-01 09:01:00+00:00", "2020-04-01 10:01:00+00:00"
    rows.insert(4, bad("dlcbad1", 8, "FAILED", t0, t1, t2, "2020-04-01 11:00:00+00:00"))  # fail_time
    rows.insert(8, bad("dlcbad2", -8, "COMPLETED", t0, t1, t2))  # gpu_num
    rows.insert(12, bad("dlcbad3", 8, "COMPLETED", t0, t2, t2))  # no run
    rows.insert(16, bad("dlcbad4", 8, "COMPLETED", "yesterday", t1, t2))  # submit_time
    rows.insert(20, bad("", 8, "COMPLETED", t0, t1, t2))  # job_id
    _write_csv(path, header, rows)


def write_pai(job_path: Path, task_path: Path) -> None:
    """Headerless tables, as published. Times are seconds from the trace's start."""
    rng = random.Random(4)
    jobs, tasks = [], []
    statuses = ("Terminated", "Failed", "Terminated")
    t = 0.0
    for i in range(32):
        t += rng.randint(0, 900)
        start = t + rng.randint(1, 300)
        end = start + int(60 * 10 ** rng.uniform(0, 3))
        name = f"{i:04x}a1b2c3d4e5f6"
        jobs.append([name, f"inst{i}", f"user{i % 6}", statuses[i % 3], t, end])
        gpus = GPU_CYCLE[i % len(GPU_CYCLE)]
        if i % 5 == 2:  # parameter server + workers
            tasks.append([name, "ps", 2, "Terminated", start, end, 600, 29.3, "", ""])
            tasks.append([name, "worker", gpus, "Terminated", start, end, 600, 29.3, 100, "V100"])
        elif i % 5 == 4:  # a fractional GPU per instance
            tasks.append([name, "worker", 1, "Terminated", start, end, 600, 29.3, 50, "T4"])
        else:
            tasks.append([name, "tensorflow", 1, "Terminated", start, end, 600, 29.3, 100 * gpus, "V100M32"])
        if i % 8 == 1:
            tasks.append([name, "evaluator", 1, "Terminated", start, end, 400, 10.0, 100, "T4"])
    jobs.insert(3, ["eval0001", "inst90", "user1", "Terminated", 100.0, 900.0])
    tasks.append(["eval0001", "evaluator", 1, "Terminated", 120.0, 900.0, 400, 10.0, 100, "T4"])  # non-training
    jobs.insert(7, ["ps000001", "inst91", "user1", "Terminated", 100.0, 900.0])
    tasks.append(["ps000001", "ps", 4, "Terminated", 120.0, 900.0, 600, 29.3, 0, ""])  # CPU-only
    jobs.insert(11, ["run00001", "inst92", "user2", "Running", 1000.0, ""])  # not finished
    jobs.insert(15, ["lost0001", "inst93", "user2", "Terminated", 1000.0, 2000.0])  # no task row
    jobs.insert(19, ["bad00001", "inst94", "user3", "Done", 1000.0, 2000.0])  # status
    jobs.insert(23, ["bad00002", "inst95", "user3", "Failed", "soon", 2000.0])  # start_time
    tasks.append(["bad00003", "worker", "many", "Terminated", 120.0, 900.0, 600, 29.3, 100, "V100"])  # inst_num
    jobs.insert(27, ["bad00003", "inst96", "user3", "Terminated", 100.0, 900.0])
    _write_csv(job_path, None, jobs)
    _write_csv(task_path, None, tasks)


def _write_csv(path: Path, header, rows) -> None:
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        if header:
            writer.writerow(header)
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write into")
    parser.add_argument("--philly-jobs", type=int, help="write only a Philly log of this many valid jobs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.philly_jobs:
        write_philly(args.out / "cluster_job_log", args.philly_jobs, with_bad=False)
        return
    write_philly(args.out / "philly_cluster_job_log.json", 36)
    write_helios(args.out / "helios_cluster_log.csv")
    write_acme(args.out / "acme_trace_kalos.csv")
    write_pai(args.out / "pai_job_table.csv", args.out / "pai_task_table.csv")


if __name__ == "__main__":
    main()
