"""Shared fixtures, the shared helper package and the list of slow tests.

- Helpers shared by several test modules live in ``tests/helpers/`` (import them as
  ``from helpers.rounds import job``), never in another ``test_*.py`` module.
- Fixtures used by several modules are defined here.
- :data:`SLOW` lists the slow tests (measured with ``pytest --durations=0``: about 2 s or
  more each on a loaded 2-core machine, or modules whose tests mostly are); they get the ``slow`` marker, so ``pytest -m "not slow"`` is the fast loop. A new
  slow test goes in this list (by module, or by test name within a module).

tests/README.md maps the test modules onto the package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # `helpers` importable whatever pytest's import mode
    sys.path.insert(0, str(TESTS))

#: module file -> test names (function names, without parameters) that are slow; ``"*"``
#: marks the whole module.
SLOW: dict[str, set[str]] = {
    "test_notebooks.py": {"*"},
    "test_course_build.py": {"*"},
    "test_course_grade.py": {"*"},
    "test_train_sb3.py": {"*"},
    "test_install.py": {"*"},
    "test_harness_kill.py": {"*"},
    "test_harness_ray.py": {"*"},
    "test_learned_prior.py": {"*"},
    "test_pretrained.py": {"*"},
    "test_baselines_fidelity.py": {"*"},
    "test_hetero_identity.py": {"*"},
    "test_env_vector_prefetch.py": {"*"},
    "test_architecture.py": {"test_a_forbidden_import_breaks_a_contract",
                             "test_a_new_core_module_importing_gymnasium_breaks_a_contract"},
    "test_config_objects.py": {"test_vector_env_takes_the_round_parameters",
                               "test_each_parameter_settable_from_evaluate"},
    "test_harness_seeds.py": {"test_the_declaration_matches_what_the_agent_does"},
    "test_agent_labels.py": {"test_policy_kinds_need_a_path_and_the_right_file",
                             "test_compare_puts_labelled_policies_beside_shipped_agents"},
    "test_env_vector.py": {"*"},
    "test_env_rl.py": {"*"},
    "test_learned_cli.py": {"*"},
    "test_env_registry.py": {"*"},
    "test_harness_resume.py": {"*"},
    "test_cli_progress.py": {"*"},
    "test_policy_folders_bad.py": {"test_bad_policy_folder_is_one_clear_error", "test_train_init_from_zip_needs_trust"},
    "test_env_hetero.py": {"test_check_env_and_determinism_pass_for_the_heterogeneous_ids",
                           "test_sequential_masks_are_exact_against_the_simulator"},
    "test_env_compiled.py": {"test_compiled_step_matches_python_path"},
    "test_leaderboard.py": {"test_leaderboard_runs_unchanged_on_the_ray_backend"},
    "test_core_properties.py": {"test_every_job_completes_under_a_work_conserving_agent",
                                "test_invariants_hold_under_arbitrary_valid_schedules"},
    "test_cli_bad_inputs.py": {"test_real_process_exit_status"},
    "test_suites.py": {"test_fixed_splits_regenerate_identically_in_a_fresh_process",
                       "test_fixed_splits_are_byte_identical_to_the_pinned_hashes"},
    "test_training_vec_adapter.py": {"test_training_runs_through_both_vectorisations"},
    "test_harness.py": {"test_failing_cell_is_reported_and_the_others_are_kept",
                        "test_worker_processes_run_torch_with_one_thread",
                        "test_results_csv_schema_one_row_per_cell",
                        "test_records_round_trip_truncated_episodes_exactly"},
    "test_shockwave_program.py": {"test_cvxpy_reference_formulation_agrees"},
    "test_shockwave_agent.py": {"*"},
    "test_shockwave_numerics.py": {"*"},
    "test_shockwave_solvers.py": {"*"},
    "test_shockwave_hetero_agent.py": {"*"},
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = SLOW.get(item.path.name)
        if names and ("*" in names or item.originalname in names):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folder(tmp_path_factory):
    """SB3's default logger (a model that is not given one, as in the documented plain-SB3
    script) makes a ``SB3-<date>`` folder in the system temp dir per run; under the tests it
    goes to pytest's temp tree (cleaned by pytest), in this process and in the ones it starts."""
    import os

    folder = str(tmp_path_factory.mktemp("sb3-logs"))
    saved = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = folder
    yield folder
    if saved is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = saved


@pytest.fixture(scope="session")
def teaching():
    """The bundled ``teaching-12`` trace on its own cluster size (4 GPUs)."""
    from shockwave_gym.traces import BUNDLED_GPUS, load_trace

    return load_trace("teaching-12", gpus=BUNDLED_GPUS["teaching-12"])


@pytest.fixture(scope="module")
def backend():
    """A HiGHS solver backend for the Shockwave program tests."""
    from shockwave_agents.shockwave.solvers import HighsBackend

    return HighsBackend()
