"""The test tiers: which tests need what, and which run by default.

Every test belongs to one tier, a pytest marker. `fast` (the README's `pytest -m fast`): every
module's results against the independent references, with the `test` extra alone, in a few
minutes. The others, which `.ci/run` runs one by one:

- `peers`: compares with Pinocchio, MuJoCo, example-robot-data or rtb-data (the `peers` extra)
- `compile`: runs the C++ compiler (kernels compiled on demand, the C++ allocation test)
- `ros`: ROS 2 nodes (the `ros` extra)
- `campaign`: Dask clusters and datasets in subprocesses
- `view`: the 3-D view's servers from the command line and in headless Chromium (the `view`
  extra and Debian's `chromium`)
- `slow`: needs no more than `fast`, but takes long (subprocess runs of the examples and the CLI,
  fuzzing, long simulations)
- `timing`: asserts a wall-clock time (or a CPU-time bound that a loaded machine exceeds), so it
  can fail on a busy machine; CI runs and reports it without failing on it

A test's tier is its own marker if it has one (the doc-block tests mark themselves from the
fence line), else the first entry of TABLE that names it: "file::test[param]", then
"file::test", then "file"; else `fast`.
"""

import pytest

TIERS = ("fast", "peers", "compile", "ros", "campaign", "view", "slow", "timing")

TABLE = {
    # the Pinocchio, MuJoCo and example-robot-data cross-checks (found by running the fast tier
    # with those packages hidden: every test that skipped there is listed here)
    "test_pinocchio.py": "peers",
    "test_constraints_pinocchio.py": "peers",
    "test_real_robots.py": "peers",
    "test_centroidal.py::test_against_pinocchio": "peers",
    "test_centroidal.py::test_solo12_against_pinocchio": "peers",
    "test_codegen.py::test_graphs_agree_ur5_panda": "peers",
    "test_codegen_floating.py::test_kane_graphs_agree_solo12": "peers",
    "test_opcount_constrained.py::test_legged_robots": "peers",
    "test_derivatives.py::test_pinocchio_derivatives": "peers",
    "test_derivatives.py::test_pinocchio_derivatives_example_robot_data": "peers",
    "test_floating_peers.py::test_coordinates_helper": "peers",
    "test_floating_peers.py::test_example_robot_data_floating": "peers",
    "test_floating_peers.py::test_random_floating_vs_pinocchio": "peers",
    "test_floating_derivatives.py::test_pinocchio_example_robot_data": "peers",
    "test_floating_derivatives.py::test_pinocchio_random_floating_trees": "peers",
    "test_identification.py::test_base_parameter_count_is_the_rank[panda]": "peers",
    "test_identification.py::test_base_parameter_count_is_the_rank[panda_independent]": "peers",
    "test_identification.py::test_base_parameter_count_is_the_rank[ur5]": "peers",
    "test_kane.py::test_ur5": "peers",
    "test_kane_floating.py::test_legged_robots": "peers",
    "test_mimic.py::test_panda_fingers_against_pinocchio_mimic": "peers",
    "test_mimic.py::test_romeo_hands_against_reduced_pinocchio": "peers",
    "test_reference_floating.py::test_against_pinocchio_free_flyer": "peers",
    "test_reference_selfcheck.py::test_against_pinocchio": "peers",
    "test_regressor.py::test_pinocchio_regressor_random": "peers",
    "test_regressor.py::test_pinocchio_regressor_example_robot_data": "peers",
    "test_urdf_example_robots.py::test_fixtures_agree_with_pinocchio": "peers",
    "test_urdf_example_robots.py::test_example_robot_data_agrees_with_pinocchio": "peers",
    "test_urdf_example_robots.py::test_example_robot_round_trip": "peers",
    "test_urdf_example_robots.py::test_example_robots_cover_fixed_joints_branches_and_continuous":
        "peers",
    "test_urdf_example_robots.py::test_non_physical_example_inertias": "peers",
    "test_urdf_example_robots.py::test_non_physical_inertia_that_never_moves_is_not_checked":
        "peers",
    "test_urdf_policy.py::test_written_urdf_loads_in_pinocchio_and_mujoco_with_the_same_dynamics":
        "peers",
    "test_usability.py::test_one_name_resolver_for_every_command": "peers",
    # the 3-D view: Talos of example-robot-data saved as HTML; a real browser (headless Chromium)
    "test_view.py::test_talos_ten_second_html_size": "peers",
    "test_view_browser.py": "view",
    "test_view.py::test_simulate_view_and_html_from_the_command_line": "view",
    "test_view.py::test_campaign_run_played_back": "view",
    "test_view.py::test_view_stops_cleanly_on_ctrl_c_and_sigterm": "view",
    "test_view_elements.py::test_loop_urdf_viewed_from_the_command_line": "view",
    # ROS 2 nodes
    "test_ros_controller.py": "ros",
    "test_ros_law.py": "ros",
    "test_ros_process.py": "ros",
    "test_ros_reference.py": "ros",
    "test_ros_sim.py": "ros",
    # Dask clusters, campaigns and datasets in subprocesses, killed and resumed
    "test_campaign_runs.py::test_local_cluster_equals_serial": "campaign",
    "test_campaign_runs.py::test_specialised_campaign_on_the_cluster": "campaign",
    "test_campaign_runs.py::test_cli_resumes_after_sigkill": "campaign",
    "test_datasets.py::test_dataset_resumes_after_sigkill": "campaign",
    "test_datasets.py::test_zarr_raw_chunk_write_failure_leaves_no_partial_file": "campaign",
    # the C++ compiler at test time
    "test_noalloc.py::test_cpp_algorithms_do_not_allocate": "compile",
    "test_noalloc.py::test_cpp_self_check_detects_an_allocation": "compile",
    "test_noalloc.py::test_cpp_rejects_unknown_mode": "compile",
    "test_link.py": "compile",
    "test_codegen.py::test_compiled_on_demand_random_chain": "compile",
    "test_codegen.py::test_mass_matrix_symmetric_by_construction": "compile",
    "test_codegen_floating.py::test_compiled_on_demand_random_floating_tree": "compile",
    "test_codegen_floating.py::test_solo12_specialised_agrees_with_generic": "compile",
    "test_codegen_floating.py::test_cli_codegen_floating_sources_embed": "compile",
    "test_codegen_constrained.py": "compile",
    "test_hardening_codegen.py::test_malicious_robot_name_runs_nothing": "compile",
    "test_hardening_codegen.py::test_generated_source_with_hostile_names_compiles": "compile",
    "test_hardening_codegen.py::test_kernel_cache_private_and_checked": "compile",
    "test_hardening_runtime.py::test_batch_worker_threads_allocate_nothing": "compile",
    # the examples and the CLI run in subprocesses, fuzzing, long simulations and processes
    "test_examples.py::test_example_runs_from_the_command_line": "slow",
    "test_constrained_simulation.py::test_passive_fourbar_keeps_energy_and_closure[10.0]":
        "slow",
    "test_seed_examples.py::test_falling_cat": "slow",
    "test_force_examples.py::test_dasc_cat_projection_keeps_rk4_accuracy": "slow",
    "test_seed_examples.py::test_jpl_spacecraft": "slow",
    "test_seed_examples.py::test_example_command_line": "slow",
    "test_adaptive.py::test_examples_run_as_scripts": "slow",
    "test_hostile.py::test_mutated_urdf_in_limited_subprocess": "slow",
    "test_hostile.py::test_array_arguments": "slow",
    "test_pickle.py::test_process_pool_uses_robots": "slow",
    "test_cli.py::test_simulate_writes_csv_and_plot": "slow",
    "test_opcount.py::test_cli_plot": "slow",
    "test_simulate.py::test_plot_writes_a_png": "slow",
    "test_simulate_floating.py::test_plot_names_the_base_coordinates_and_draws_them": "slow",
    "test_simulate_floating.py::test_rk4_without_the_transport_is_second_order": "slow",
    "test_usability.py::test_animation_gif_is_written": "slow",
    "test_urdf_fuzz.py::test_mutated_files_raise_only_urdf_errors": "slow",
    "test_urdf_policy.py::test_cli_strict_and_xacro_arguments": "slow",
    # the kernel cache's trust checks compile kernels and a planted library
    "test_codegen_cache.py": "compile",
    # builds bench/call_layer's pybind11 and nanobind modules (skipped without nanobind)
    "test_bench_call_layer.py": "compile",
    # the ROS 2 controller's joint-state checks (the `ros` extra)
    "test_ros_checks.py": "ros",
    # a scheduler that is not Dask, through the console script (waits for the connect timeout)
    "test_campaign_limits.py::test_cli_scheduler_that_is_not_dask": "campaign",
    # drawings and GIFs through the console script, and every example's figure
    "test_example_figures.py": "slow",
    "test_show.py::test_show_draws_a_seed_system": "slow",
    "test_show.py::test_show_floating_takes_the_full_configuration": "slow",
    "test_show.py::test_show_floating_base_option_on_a_urdf": "slow",
    "test_show.py::test_show_quiet_says_nothing": "slow",
    "test_animate.py::test_simulate_floating_animate_from_the_command_line": "slow",
    "test_cli_messages.py::test_quiet_hides_wrote_file": "slow",
    # wall-clock assertions, and a CPU-time bound that a loaded machine exceeds (1.7 s of 1.5)
    "test_hardening_runtime.py::test_long_chain_builds_in_linear_time_and_memory": "timing",
    "test_cli.py::test_simulate_stanford_arm_with_no_options_is_quick": "timing",
    "test_ros_process.py::test_the_nodes_run_until_sigint_or_sigterm_and_stop_within_half_a_second":
        "timing",
    "test_ros_law.py::test_computed_torque_law_stale_fallback_and_malformed_joint_states": "timing",
    "test_urdf_input.py::test_entity_expansion_is_refused_fast": "timing",
    "test_urdf_example_robots.py::test_panda_loads_fast": "timing",
    "test_hardening_inputs.py::test_devices_refused": "timing",
    "test_hardening_runtime.py::test_ctrl_c_stops_simulate_promptly": "timing",
    "test_hardening_runtime.py::test_simulate_raises_keyboard_interrupt_from_cpp_loop": "timing",
}


def tier(item):
    """The tier of a collected test item."""
    for name in TIERS:
        if item.get_closest_marker(name) is not None:
            return name
    file = item.path.name if hasattr(item, "path") else item.fspath.basename
    function = getattr(item, "originalname", None) or item.name
    for key in (f"{file}::{item.name}", f"{file}::{function}", file):
        if key in TABLE:
            return TABLE[key]
    return "fast"


def mark(items):
    """Give every item the marker of its tier."""
    for item in items:
        name = tier(item)
        if item.get_closest_marker(name) is None:
            item.add_marker(getattr(pytest.mark, name))
