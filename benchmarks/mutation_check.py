"""Mutation check: small semantic breakages of ganforge, each paired with the tests that must catch it.

Every mutant is applied to a fresh temporary copy of src/ and tests/ (never to this working tree), and its tests run
there with PYTHONPATH pointing at the copy's src (checked: the copy, not the editable install, is what imports). A
mutant is killed when its tests fail. Before the mutants, the same tests run once on an unmutated copy and must pass,
so a kill means the mutation, not a broken test. Prints mutant -> killed/survived with the seconds each took; exits 1
unless every mutant is killed.

    .venv/bin/python benchmarks/mutation_check.py              # all of them (an hour or more on 2 cores)
    .venv/bin/python benchmarks/mutation_check.py --only pl_no_sqrt --only r1_negated
    .venv/bin/python benchmarks/mutation_check.py --list
    .venv/bin/python benchmarks/mutation_check.py --check-applies   # seconds: does every mutant's text still occur?
"""

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 900  # per run of a mutant's tests; the baseline, which runs them all at once, has this per 100 of them


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # file under src/ganforge
    old: str  # text that must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest node ids, relative to the repository root


REFERENCE = "tests/train/test_train_reference.py::"
SINKS = "tests/train/test_train_sinks.py::"
KERNELS = "tests/nets/test_kernels_triton.py::"
SCHEDULE = "tests/train/test_train_schedule.py::"
RUN_CHOICE = "tests/train/test_train_run_choice.py::"
PRETRAINED = "tests/train/test_train_pretrained.py::"
PROJECT = "tests/project/test_project.py::"
PROJECT_LAYOUT = PROJECT + "test_the_latent_is_in_the_official_layout_with_the_noise_maps_beside_it"
PROJECTED_TESTS = "tests/generate/test_generate_projected.py::"
PROJECTED_HOSTILE = PROJECTED_TESTS + "test_hostile_files_are_one_error_line_and_exit_2"
PROJECTED_NOISE = PROJECTED_TESTS + "test_stored_noise_maps_are_used_and_a_file_without_them_takes_the_networks"
FINE_TUNING_SCHEDULES = PRETRAINED + "test_fine_tuning_keeps_the_files_g_ema_and_lets_ada_react_within_the_run"
METRICS_REFERENCE = "tests/metrics/test_metrics_reference.py::test_inception_inputs_are_fid_helper_pytorchs"
SWD_REFERENCE = "tests/metrics/test_metrics_swd.py::test_laplacian_pyramid_matches_the_burt_adelson_reference"
COMPILE_OPTIONS = "tests/train/test_train_compile_options.py::"
COMPILED_PHASES = "tests/train/test_train_compiled_phases.py::"
PRECISION_TESTS = "tests/train/test_train_precision.py::"
COMPILE_MODE_TEST = PRECISION_TESTS + "test_the_compile_mode_reaches_torch_compile_and_only_cuda_replays_cuda_graphs"
SWD_LEVEL = "tests/metrics/test_metrics_swd.py::test_swd_of_one_level_equals_the_progan_reference"
PL = REFERENCE + "test_g_reg_path_length_matches_finite_differences_and_pl_mean_is_its_ema"
LOOP_SCHEDULE = SCHEDULE + "test_loop_runs_r1_every_16_and_path_length_every_4_steps_and_ramps_the_ema_up"
NETS = "tests/nets/test_nets_reference.py::"
LAYOUTS = "tests/train/test_train_layouts.py::"
ATTENTION = "tests/nets/test_nets_attention.py::"
NUMERICS = "tests/train/test_train_numerics.py::"
NO_SYNC = "tests/train/test_train_no_host_sync.py::"
STEP_MEMORY = "tests/train/test_step_memory.py::"
GROWTH = "tests/nets/test_nets_growth.py::"
GROWING = "tests/train/test_train_growth.py::"
PARAMS = "tests/nets/test_nets_params.py::"
KID_PR = "tests/metrics/test_metrics_kid_pr.py::"
SG3 = "tests/train/test_train_stylegan3.py::"
IMAGES = "tests/data/test_data_images.py::"
KID_SUBSETS = KID_PR + "test_kid_subsets_are_seeded_random_and_no_larger_than_either_set"
CONTROLS = "tests/train/test_train_controls.py::"
CONTROLS_RUN = CONTROLS + "test_tick_stats_report_scheduled_rates_and_clipping"
CLIPPING = "tests/train/test_train_clipping.py::test_clipping_caps_the_unscaled_norm_and_reports_the_norm_before"
DIFFAUG = "tests/train/test_diffaugment.py::"
DIFFAUG_REF = "tests/train/test_diffaugment_reference.py::"
CORRUPT_REF = "tests/train/test_corrupt_reference.py::"
R3GAN = "tests/train/test_train_r3gan.py::"
SHARDS = "tests/data/test_data_shards.py::"
TARSTREAM_REFUSALS = "tests/data/test_data_tarstream.py::test_refuses_with_a_reason_and_bounded_reads"
REMOTE = "tests/data/test_data_remote.py::"
NUMPY_REFUSAL = "tests/interop/test_interop_numpy_refusal.py::"
GENERATE_FOLDERS = (
    "tests/generate/test_generate_cli.py::test_a_run_folder_or_a_checkpoint_folder_names_its_newest_network"
)
REMOTE_BOUNDS = REMOTE + "test_a_body_is_never_read_past_its_range_and_the_index_has_a_cap"
REMOTE_HOSTILE = REMOTE + "test_a_misbehaving_server_is_one_line_naming_what_it_did"
REMOTE_RANGES = REMOTE + "test_a_shard_is_asked_for_its_declared_bytes_only_and_ranges_are_required"
VECTORS = "tests/data/test_data_label_vectors.py::"
RESUMABLE_CASES = "tests/checkpoint/test_checkpoint_resumable.py::test_verify_and_resume_agree"
R3GAN_NETS = "tests/nets/test_nets_r3gan.py::"
R3GAN_IMPORT = "tests/interop/test_interop_r3gan.py::"
R3GAN_AUTO_BF16 = "tests/train/test_autoprecision.py::test_auto_bf16_gives_r3gan_its_released_bfloat16_stages"
R3GAN_COUNTS = R3GAN_NETS + "test_every_released_configuration_has_the_released_parameter_counts"
R3GAN_FIXUP = (
    R3GAN_NETS + "test_fixup_initialisation_starts_every_residual_branch_at_zero_and_scales_the_others_by_depth"
)
R3GAN_CONDITIONING = (
    R3GAN_NETS + "test_g_concatenates_the_class_embedding_to_z_and_d_projects_its_features_on_the_class_embedding"
)
R3GAN_LOSSES = R3GAN + "test_relativistic_losses_are_the_negative_log_sigmoid_of_each_pairs_difference"
R3GAN_WIDTHS = R3GAN + "test_cbase_and_cmax_set_the_widths_and_widths_that_cannot_be_built_are_refused_in_one_line"
R3GAN_PHASES = (
    R3GAN + "test_d_phase_is_rpgan_with_r1_on_reals_and_r2_on_fakes_and_g_phase_pairs_each_fake_with_its_real"
)
RECORDED_DRY_RUN = "tests/train/test_train_dry_run_recorded.py::test_dry_run_config_equals_the_recorded_one"
SEEN = "tests/report/test_report_seen.py::"
PROFILER = "tests/monitor/test_monitor_profiler.py::"
PROFILER_DETAIL = PROFILER + "test_detail_records_shapes_and_memory_into_a_larger_trace_and_its_warning_is_routed"
PROFILER_BOUND = PROFILER + "test_a_phase_that_never_runs_ends_the_window_at_its_bound_and_the_summary_says_so"
INSPECT = "tests/checkpoint/test_checkpoint_inspect.py::"
DIFF_SNAPSHOTS = "tests/checkpoint/test_checkpoint_diff_snapshots.py::"
EXPORT_PROGRESS = "tests/export/test_export_progress.py::"
INT8_CHOICE = "tests/export/test_export_int8_choice.py::"
EXPORT_CHECK = "tests/export/test_export_check.py::"
QAT = "tests/export/test_export_qat.py::"
QAT_MATCHES = QAT + "test_the_simulated_rounding_is_the_exported_graphs_and_qat_brings_it_closer_to_the_float_generator"
METRICS_PROGRESS = "tests/metrics/test_metrics_progress.py::"
TERMINAL_CARD = "test_on_a_terminal_each_stage_has_a_bar_and_the_card_records_the_calibration"
TF_REFUSAL = "tests/interop/test_interop_tf_refusal.py::"
TF_REFERENCE = "tests/interop/test_interop_tf.py::test_imported_networks_compute_what_tensorflow_computes"
PPL_TESTS = "tests/metrics/test_metrics_ppl.py::"
PPL_REFERENCE = PPL_TESTS + "test_each_variant_equals_the_float64_reference"
IS_HAND = "tests/metrics/test_metrics_is.py::test_is_equals_the_hand_computation_over_ten_uneven_splits"
EXPLORE_API = "tests/explore/test_explore_api.py::"
EXPLORE_CLI = "tests/explore/test_explore_cli.py::"
EXPLORE_CONNECTIONS = "tests/explore/test_explore_connections.py::"
PROJECT_TERMS = "tests/project/test_project_terms.py::"
CONSUMED = "tests/train/test_train_schedules_consumed.py::"
CONSUMED_R3GAN = CONSUMED + "test_r3gan_steps_take_the_annealed_gamma_beta2_lr_ema_and_p"
CONSUMED_SG3 = CONSUMED + "test_stylegan3_d_sees_the_fading_blur_and_a_growing_d_the_stages"
EXPLORE_COMMAND = "tests/explore/test_explore_command.py::"
GENERATE_LIMITS = "tests/generate/test_generate_limits.py::"
PYTHON_CALLERS = "test_options_made_in_python_meet_the_checks_of_the_command_line"
DECLARED_HOSTILE = (
    "tests/hostile/test_hostile_options.py::test_every_declared_commands_bad_numbers_and_choices_are_one_line_each"
)
M = Mutant

VIEWS = "tests/explore/test_explore_views.py::"
SPECTRUM = "test_the_spectrum_is_of_the_images_file_pixels_centred_on_a_log_scale"
ZOOM = "test_one_channel_is_enlarged_and_is_that_channel_of_the_strip"
EXACT = "test_a_projected_row_and_a_moved_w_are_the_files_of_the_commands_sent_with_them"
EDITS = "tests/generate/test_generate_edits.py::"
BROWSER_VIEWS = (
    "tests/explore/test_explore_browser.py::"
    "test_a_latent_row_a_moved_w_a_free_mix_range_a_zoomed_channel_and_the_spectrum_show_what_the_api_returns"
)

MUTANTS = (
    # Training phases: what each loss sees and how it is weighted.
    M("d_never_sees_reals", "train/phases.py", "trainer.discriminate_pair(img, mb.real, mb)",
      "trainer.discriminate_pair(img, img, mb)", (REFERENCE + "test_d_main_is_the_logistic_loss_on_reals_and_fakes",)),
    M("g_loss_saturating", "train/loss.py", "return F.softplus(-fake_logits).flatten()",
      "return -F.softplus(fake_logits).flatten()",
      (REFERENCE + "test_g_main_is_the_nonsaturating_loss_of_d_on_fakes",)),
    M("r1_negated", "train/phases.py", "(penalty,) = L.zero_centred_penalties((logits,), (real,), mb.gamma)",
      "(penalty,) = L.zero_centred_penalties((-logits,), (real,), -mb.gamma)",
      (REFERENCE + "test_d_reg_is_r1_on_reals_weighted_by_its_interval",)),
    M("pl_negated", "train/phases.py", "L.path_length_penalty(lengths, trainer.pl_mean) * cfg.loss.pl_weight",
      "L.path_length_penalty(lengths, trainer.pl_mean) * -cfg.loss.pl_weight", (PL,)),
    M("pl_no_sqrt", "train/loss.py", "return grads.square().sum(2).mean(1).sqrt()",
      "return grads.square().sum(2).mean(1)", (PL,)),
    M("pl_sum_over_ws", "train/loss.py", "return grads.square().sum(2).mean(1).sqrt()",
      "return grads.square().sum(2).sum(1).sqrt()", (PL,)),
    M("pl_probe_unscaled", "train/phases.py", "noise / (img.shape[2] * img.shape[3]) ** 0.5", "noise", (PL,)),
    M("pl_one_probe_for_all_images", "train/phases.py", "derive_seed(cfg.schedule.seed, position, _PL_PROBE",
      "derive_seed(cfg.schedule.seed, 0, _PL_PROBE", (PL,)),
    M("g_main_ignores_labels", "train/phases.py", "logits = trainer.discriminate(img, mb)\n    loss = L.g_non",
      "logits = trainer.D_main(img, None)\n    loss = L.g_non",
      (REFERENCE + "test_g_main_is_the_nonsaturating_loss_of_d_on_fakes",)),
    M("pl_mean_one_minus_decay", "train/loss.py", "return pl_mean.lerp(mean_length, decay)",
      "return pl_mean.lerp(mean_length, 1 - decay)", (PL,)),
    M("bf16_autocast_off", "train/precision.py", '_AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}',
      '_AUTOCAST = {"fp16": torch.float16}', (REFERENCE + "test_bf16_autocast_really_runs_the_phases_in_bfloat16",)),
    M("mixing_cutoffs_not_uniform", "train/loss.py", "cut = 1 + (u_cut * (num_ws - 1)).long()",
      "cut = 1 + (u_cut * (num_ws + 1)).long()",
      (REFERENCE + "test_style_mixing_cutoffs_are_uniform_over_the_layers_with_probability_p",)),
    # Lazy regularisation (StyleGAN2 Sec. 3.1, App. C).
    M("lazy_every_step", "train/schedules.py", "due=tuple(phase_due(s, phase.network.name, phase.interval, cur_nimg)",
      "due=tuple(True", (LOOP_SCHEDULE,)),
    M("lazy_ratio_one", "train/phases.py", "ratio = lazy_ratio(interval) if reg_on else 1.0", "ratio = 1.0",
      (SCHEDULE + "test_lazy_regularisation_corrects_adam_lr_and_betas",)),
    M("lazy_ratio_formula", "config/__init__.py", "return interval / (interval + 1)",
      "return (interval - 1) / interval", (SCHEDULE + "test_lazy_regularisation_corrects_adam_lr_and_betas",)),
    # Training controls: learning-rate schedules, two-phase training, clipping, DiffAugment, ADA's filter.
    M("lr_no_warmup", "train/schedules.py", "return min(cur_nimg / warmup, 1.0) if warmup > 0 else 1.0",
      "return 1.0", (CONTROLS + "test_warmup_is_linear_from_zero_then_flat",)),
    M("lr_cosine_half_period", "train/schedules.py",
      "(1 - optim.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))",
      "(1 - optim.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * progress / 2))",
      (CONTROLS + "test_cosine_end_points_and_midpoint_after_warmup",)),
    M("lr_step_one_image_late", "train/schedules.py", "cur_nimg >= _nimg(kimg)", "cur_nimg > _nimg(kimg)",
      (CONTROLS + "test_step_schedule_multiplies_at_each_boundary",)),
    M("lr_schedule_unused", "train/phases.py", 'group["lr"] = phase.lr * plan.lr_factor', 'group["lr"] = phase.lr',
      (CONTROLS_RUN,)),
    M("d_warmup_ignored", "train/schedules.py", "since_warmup = cur_nimg - round(schedule.d_warmup_kimg * 1000)",
      "since_warmup = cur_nimg", (CONTROLS + "test_g_is_bitwise_untouched_during_d_warmup_and_trains_after",)),
    M("d_steps_ignored", "train/schedules.py", "period = schedule.batch * schedule.d_steps", "period = schedule.batch",
      (CONTROLS + "test_d_warmup_and_d_steps_choose_the_phases_by_image_count",)),
    M("clip_before_unscale", "train/phases.py", "        network.scaler.unscale_(network.opt)\n", "",
      (CLIPPING,)),
    M("clip_ignored", "train/phases.py", "torch.nn.utils.clip_grads_with_norm_(params, clip, grad_norm)", "pass",
      (CLIPPING,)),
    M("diffaug_translation_sign", "augment/diffaugment.py", "- shifts[1]  # [N, W]", "+ shifts[1] * 3  # [N, W]",
      (DIFFAUG + "test_translation_is_a_zero_padded_shift_of_at_most_an_eighth",)),
    M("diffaug_cutout_quarter", "augment/diffaugment.py", "side = int(size * CUTOUT_RATIO + 0.5)",
      "side = int(size * CUTOUT_RATIO / 2 + 0.5)", (DIFFAUG + "test_cutout_zeroes_one_half_size_square_per_image",)),
    M("ada_filter_bands_reversed", "augment/corrupt.py", "* gains[:, band][:, None]",
      "* gains[:, 3 - band][:, None]", (DIFFAUG + "test_filter_amplifies_a_sinusoid_by_its_band_gain",)),
    M("clip_grad_for_both_ignored", "train/resolver.py", '"optim.clip_grad_g": options.clip_grad,',
      '"optim.clip_grad_g": None,',
      (CONTROLS + "test_each_control_is_a_maths_field_and_changes_the_hash[clip_grad]",)),
    M("fixed_p_dropped", "train/build.py", "return AugmentPipe(a.pipe, p=a.p).to(device), None",
      "return AugmentPipe(a.pipe).to(device), None", (CONTROLS + "test_each_augment_mode_builds_what_d_sees_through",)),
    # Presets and the EMA generator.
    M("auto_gamma_without_batch", "train/resolver.py", "return per_pixel * resolution**2 / batch",
      "return per_pixel * resolution**2", (SCHEDULE + "test_auto_preset_derives_the_ada_heuristic",)),
    M("auto_ema_fixed", "train/resolver.py", "ema_kimg=batch * 10 / 32,", "ema_kimg=10,",
      (SCHEDULE + "test_auto_preset_derives_the_ada_heuristic",)),
    M("auto_no_rampup", "families/stylegan2/traits.py", '"auto": Preset(ema_rampup=0.05,',
      '"auto": Preset(ema_rampup=None,',
      (SCHEDULE + "test_auto_preset_derives_the_ada_heuristic",)),
    M("ema_rampup_max", "train/schedules.py", "ema_nimg = min(ema_nimg, cur_nimg * rampup)",
      "ema_nimg = max(ema_nimg, cur_nimg * rampup)",
      (SCHEDULE + "test_ema_beta_is_a_half_life_in_images_with_rampup",)),
    M("ema_beta_swapped", "train/schedules.py", "p_ema.copy_(p.detach().lerp(p_ema, beta))",
      "p_ema.copy_(p_ema.lerp(p.detach(), beta))",
      (SCHEDULE + "test_update_ema_interpolates_parameters_and_copies_buffers",)),
    M("ema_rampup_one_step_late", "train/schedules.py", "ema_beta=ema_beta(s.batch, cur_nimg, ema_kimg_at(",
      "ema_beta=ema_beta(s.batch, cur_nimg + s.batch, ema_kimg_at(", (LOOP_SCHEDULE,)),
    M("mirror_ignored", "train/build.py", "open_dataset(cfg.data.path, mirror=cfg.data.mirror, labels=cfg.data.cond)",
      "open_dataset(cfg.data.path, labels=cfg.data.cond)",
      (SCHEDULE + "test_mirror_trains_on_the_flipped_copies_too",)),
    # Adaptive augmentation.
    M("ada_fakes_unaugmented", "train/phases.py",
      "images = torch.cat([self._prepare(fakes, mb.blur_sigma), self._prepare(reals, mb.blur_sigma)])",
      "images = torch.cat([fakes, self._prepare(reals, mb.blur_sigma)])",
      (REFERENCE + "test_augmentation_reaches_every_image_d_sees_reals_and_fakes[D_main]",)),
    M("ada_r1_reals_unaugmented", "train/phases.py", "logits = trainer.discriminate(real, mb, main=False)",
      "logits = trainer.D(real, mb.c)",
      (REFERENCE + "test_augmentation_reaches_every_image_d_sees_reals_and_fakes[D_reg]",)),
    M("ada_sign_flipped", "augment/pipe.py", "step = torch.sign(rt - self.target)",
      "step = torch.sign(self.target - rt)", ("tests/train/test_augment.py::test_ada_moves_p_by_exact_step",)),
    M("ada_never_adjusts", "train/loop.py", "trainer.ada.update(trainer.augment, s.batch)",
      "trainer.ada.update(trainer.augment, 0)",
      ("tests/test_resume.py::test_two_identical_runs_give_identical_tensors",)),
    M("ada_per_rank_signs", "augment/pipe.py", "dist.all_reduce_sum_(step_totals)", "step_totals.mul_(1)",
      ("tests/train/test_augment_dist.py",)),
    # StyleGAN3 training.
    M("sg3_d_unblurred", "train/phases.py", "images = blur_images(images, blur_sigma)", "images = images",
      (SG3 + "test_d_sees_every_image_blurred_during_the_warm_up",)),
    M("sg3_blur_fade_in_images", "train/schedules.py", "cur_nimg / (fade_kimg * 1000)", "cur_nimg / fade_kimg",
      (SG3 + "test_blur_sigma_fades_linearly_to_zero",)),
    M("sg3_blur_gaussian_std", "augment/blur.py", "torch.exp2(-(torch.arange(", "torch.exp(-0.5 * (torch.arange(",
      (SG3 + "test_blur_kernel_taps_by_hand",)),
    M("sg3_magnitude_beta_per_micro_batch", "train/schedules.py", "batch / accumulation / (MAGNITUDE",
      "batch / (MAGNITUDE",
      (SG3 + "test_magnitude_ema_decays_by_half_every_20_kimg_per_step_whatever_the_accumulation",)),
    M("sg3_gamma_as_ada", "families/stylegan3/traits.py", "gamma_per_pixel=0.001,", "gamma_per_pixel=0.0002,",
      (SG3 + "test_presets_follow_the_released_stylegan3_setup_at_256",)),
    M("sg3_fp16_res_from_the_field_only", "train/resolver.py", "else _pick(preset.fp16_res, default)",
      "else default",
      (SG3 + "test_stylegan3_schedules_follow_the_batch_actually_used_and_fp16_uses_the_per_layer_recipe",)),
    M("sg3_magnitude_in_d_main", "train/phases.py", "and main and update_emas and", "and main and",
      (SG3 + "test_magnitude_ema_is_updated_in_g_main_only_with_the_input_mean_square",)),
    # Resume.
    M("resume_keeps_checkpoint_lr", "train/checkpointing.py", "groups = [group | settings for",
      "groups = [group for",
      ("tests/train/test_train_resume_options.py::test_allow_config_change_continues_with_the_new_values",
       CONTROLS + "test_a_resume_that_turns_r1_off_takes_this_runs_adam_betas")),
    M("resume_new_continues", "train/rundir.py", 'if key.resume == "new":', "if False:",
      ("tests/train/test_train_resume_options.py::test_resume_new_always_starts_a_run_from_scratch",)),
    M("sigint_not_caught", "preempt.py", "_SIGNALS = (signal.SIGTERM, signal.SIGINT)", "_SIGNALS = (signal.SIGTERM,)",
      ("tests/checkpoint/test_checkpoint_preempt.py::test_signal_sets_flag_and_handlers_are_restored",)),
    M("restart_reads_old_attempt", "dist.py", "{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", "0",
      ("tests/test_scaleout.py::test_each_restart_attempt_sees_none_of_the_previous_attempts_keys",)),
    M("pg_pinned_by_late_import", "dist.py", 'importlib.import_module("torch.distributed.nn")', "pass",
      ("tests/test_lifecycle.py::test_shutdown_stops_every_gloo_thread",)),
    M("check_replicas_blind", "dist.py", "if not torch.equal(reference, tensor.detach()):", "if False:",
      ("tests/test_dist_replicas.py",)),
    # Metrics.
    M("fid_align_corners_resize", "metrics/inception.py", "x = tf1_bilinear_resize(x, INCEPTION_SIZE)",
      'x = torch.nn.functional.interpolate(x, (INCEPTION_SIZE,) * 2, mode="bilinear", align_corners=True)',
      (METRICS_REFERENCE,)),
    M("fid_half_pixel_resize", "metrics/inception.py", "src = torch.arange(out_size, dtype=torch.float64) * (",
      "src = -0.5 + (torch.arange(out_size, dtype=torch.float64) + 0.5) * (", (METRICS_REFERENCE,)),
    M("fid_inputs_over_255", "metrics/inception.py", "features = self.net((x - 128) / 128)",
      "features = self.net(x / 255)", (METRICS_REFERENCE,)),
    M("fid_inputs_torch_scaling", "metrics/inception.py", "features = self.net((x - 128) / 128)",
      "features = self.net(x / 127.5 - 1)", (METRICS_REFERENCE,)),
    M("swd_box_kernel", "metrics/swd.py", "_BINOMIAL = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0]) / 16",
      "_BINOMIAL = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0]) / 5", (SWD_REFERENCE,)),
    M("swd_expand_gain_16", "metrics/swd.py", "_blur(up, gain=4.0)", "_blur(up, gain=16.0)", (SWD_REFERENCE,)),
    M("swd_patch_rows_upwards", "metrics/swd.py", "corners[:, :, 0, None, None] + offsets[:, None]",
      "corners[:, :, 0, None, None] - offsets[:, None]", (SWD_LEVEL,)),
    M("swd_normalised_per_image", "metrics/swd.py", "mean = x.mean(dim=(0, 2), keepdim=True)",
      "mean = x.mean(dim=(1, 2), keepdim=True)", (SWD_LEVEL,)),
    M("swd_not_times_1e3", "metrics/swd.py", "out.append(sliced_wasserstein(a, b, dirs) * 1e3)",
      "out.append(sliced_wasserstein(a, b, dirs))", (SWD_LEVEL,)),
    M("fid_in_float32", "metrics/fid.py", "dtype=torch.float64) for a in (mu1", "dtype=None) for a in (mu1",
      ("tests/metrics/test_metrics_fid.py::test_float32_statistics_are_compared_in_float64",)),
    M("kid_subsets_unseeded", "metrics/kid.py", "gen = torch.Generator().manual_seed(seed)", "gen = None",
      (KID_SUBSETS,)),
    M("kid_subset_size_ignored", "metrics/kid.py", "m = min(subset_size, real.shape[0], fake.shape[0])",
      "m = min(real.shape[0], fake.shape[0])", (KID_SUBSETS,)),
    M("pr_ball_boundary_excluded", "metrics/pr.py", "<= radii[None]", "< radii[None]",
      (KID_PR + "test_coverage_includes_the_ball_boundary",)),
    M("kid_biased", "metrics/kid.py", "within_x = (kxx.sum() - kxx.diagonal().sum()) / (m * (m - 1))",
      "within_x = kxx.sum() / (m * m)", (KID_PR + "test_mmd2_matches_direct_pairwise_sums",)),
    M("pr_radius_off_by_one", "metrics/pr.py", ".kthvalue(k + 1, dim=1)", ".kthvalue(k, dim=1)",
      (KID_PR + "test_knn_radii_on_a_line",)),
    # Networks.
    M("d_no_residual_gain", "nets/discriminator.py", "x = self.conv1(self.conv0(x), gain=RESIDUAL_GAIN)",
      "x = self.conv1(self.conv0(x))", (NETS + "test_discriminator_equals_the_reference_forward",)),
    M("g_conv1_takes_conv0_w", "nets/generator.py", "x = self.conv1(x, ws[:, 1], noise_mode)\n",
      "x = self.conv1(x, ws[:, 0], noise_mode)\n", (NETS + "test_generator_equals_the_reference_forward",)),
    M("g_resnet_skip_ungained", "nets/generator.py", "y = self.skip(x.to(dtype), gain=RESIDUAL_GAIN)",
      "y = self.skip(x.to(dtype))", (NETS + "test_generator_equals_the_reference_forward",)),
    M("g_torgb_in_every_block", "nets/generator.py", 'if is_last or architecture == "skip" or progressive:', "if True:",
      (PARAMS + "test_parameter_counts_equal_official_for_every_architecture",)),
    M("d_skip_and_resnet_wiring_swapped", "nets/discriminator.py",
      'if in_channels == 0 or architecture == "skip" or progressive:',
      'if in_channels == 0 or architecture == "resnet" or progressive:',
      (PARAMS + "test_parameter_counts_equal_official_for_every_architecture",
       NETS + "test_discriminator_equals_the_reference_forward")),
    M("mbstd_std_before_eps", "nets/discriminator.py", "y = (y + 1e-8).sqrt().mean(dim=[3, 4, 5])",
      "y = (y + 1e-2).sqrt().mean(dim=[3, 4, 5])",
      (NETS + "test_discriminator_equals_the_reference_forward",)),
    M("mbstd_groups_stacked_batches_together", "nets/discriminator.py",
      "y = x.reshape(batches, g, -1, f, c // f, h, w)", "y = x.reshape(1, g, -1, f, c // f, h, w)",
      ("tests/nets/test_nets_discriminator.py::test_stacked_batches_give_the_logits_and_gradients_of_one_call_per_batch",)),
    M("fir_backward_not_the_adjoint", "nets/layers.py", "_DepthwiseFIR.apply(grad, ctx.f, not ctx.transpose,",
      "_DepthwiseFIR.apply(grad, ctx.f, ctx.transpose,",
      ("tests/nets/test_nets_fir_derivatives.py::test_backward_is_the_adjoint_and_keeps_the_input_size",)),
    M("winograd_overlaps_overwritten", "nets/winograd.py", "blocks[:, :, : i1 - i0, :, : j1 - j0] += tiles",
      "blocks[:, :, : i1 - i0, :, : j1 - j0] = tiles",
      ("tests/nets/test_nets_winograd.py::test_first_and_second_derivatives_match_finite_differences",)),
    M("winograd_rows_restart_in_each_group", "nets/winograd.py", "yield start // SPAN + r,", "yield r,",
      ("tests/nets/test_nets_winograd.py::test_samples_in_chunks_and_tile_entries_in_groups_give_the_same_result",)),
    # Speed paths.
    M("grad_sync_starts_a_bucket_early", "train/grad_sync.py", "self._waiting[self._next] == 0:",
      "self._waiting[self._next] <= 1:",
      ("tests/train/test_grad_sync.py::test_overlapped_buckets_equal_the_flat_all_reduce_and_the_exact_sum",)),
    M("cudnn_never_autotunes", "train/precision.py", "torch.backends.cudnn.benchmark = not deterministic",
      "torch.backends.cudnn.benchmark = False", ("tests/train/test_train_precision.py",)),
    M("auto_bf16_on_volta", "devices.py", "if capability >= AMPERE:", "if capability >= (7, 0):",
      ("tests/train/test_autoprecision.py",)),
    M("auto_bf16_on_native_cpus", "devices.py", 'return "fp32", (\n            f"on CPU, even with native bf16',
      'return "bf16", (\n            f"on CPU, even with native bf16', ("tests/train/test_autoprecision.py",)),
    M("auto_not_the_default", "config/sections.py", "        default=AUTO_PRECISION,", '        default="fp32",',
      ("tests/train/test_autoprecision.py",)),
    M("grad_checkpoint_redraws_noise", "nets/recompute.py", "preserve_rng_state=True)", "preserve_rng_state=False)",
      ("tests/train/test_grad_checkpoint.py::test_every_phase_gets_bitwise_the_same_gradients",)),
    M("d_input_keeps_its_layout", "nets/discriminator.py", "img = img.contiguous(memory_format=torch.channels_last)",
      "img = img", ("tests/nets/test_nets_discriminator.py::test_every_block_works_in_channels_last_on_cpu",)),
    M("allocator_keeps_glibcs_trim", "allocator.py", "libc.mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)",
      "libc.mallopt(M_TRIM_THRESHOLD, 128 * 1024)", ("tests/test_allocator.py",)),
    M("allocator_not_set_by_the_command", "cli/__init__.py", "    keep_freed_memory()  #", "    #",
      ("tests/test_allocator.py",)),
    # Import.
    M("sg3_import_r_widths_not_halved", "interop/official_stylegan3.py", "widen = 2 if radial else 1", "widen = 1",
      ("tests/interop/test_interop_stylegan3.py",)),
    # Data.
    M("exif_wrong_direction", "data/images.py", "image = ImageOps.exif_transpose(image)",
      "image = ImageOps.exif_transpose(image).transpose(Image.Transpose.ROTATE_180)",
      (IMAGES + "test_exif_orientation_turns_the_way_the_tag_says",)),
    M("cmyk_inverted", "data/images.py", 'image = image.convert("L" if channels == 1 else "RGB")',
      'image = (Image.fromarray(255 - np.asarray(image), "CMYK") if image.mode == "CMYK" else image).convert('
      '"L" if channels == 1 else "RGB")', (IMAGES + "test_cmyk_colours_convert_by_the_standard_formula",)),
    M("fast_reader_starts_workers", "data/loader.py",
      "workers = 0 if in_process else workers", "workers = workers",
      ("tests/data/test_data_loader.py::test_fast_format_starts_no_worker_processes_where_a_zip_does",)),
    # Options: declared once, every value checked against its declaration, every given value reaches its field.
    M("option_range_unchecked", "option.py",
      "if self.option.range is None or self.option.range.problem(value) is None:", "if True:",
      ("tests/hostile/test_hostile_options.py",)),
    M("option_nan_in_range", "option.py", "finite = not isinstance(value, float) or math.isfinite(value)",
      "finite = True", ("tests/hostile/test_hostile_options.py",)),
    M("given_zero_dropped", "train/resolver.py", "value is not None and value is not False",
      "value not in (None, False)", (RECORDED_DRY_RUN + "[tiny-every-flag]",)),
    M("cpu_kernels_not_chosen", "train/build.py", "        D.use_cpu_kernels()\n", "",
      ("tests/train/test_train_config.py::"
       "test_networks_built_for_cpu_training_take_the_cpu_kernels_and_generic_ones_do_not",)),
    M("winograd_for_small_layers", "nets/winograd.py",
      "and min(in_ch, out_ch) >= MIN_CHANNELS and pixels >= MIN_PIXELS", "", ("tests/nets/test_nets_winograd.py::"
           "test_networks_choose_winograd_when_built_for_cpu_and_only_for_layers_where_it_pays",)),
    # Checkpoints: verify and resume share one validator; sizes are compared before anything is read; a damaged
    # config.json of the run to continue stops train instead of starting over.
    M("ckpt_numpy_rng_position_unchecked", "checkpoint/rng.py",
      'whole(state["pos"], "rng/numpy/pos", 0, _MT_WORDS)', 'int(state["pos"])',
      ("tests/checkpoint/test_checkpoint_resumable.py::test_a_format_2_checkpoints_python_and_numpy_states_are_checked",)),
    M("ckpt_rng_records_pythons_generator", "checkpoint/rng.py",
      '        "torch": torch.get_rng_state(),\n',
      '        "python": list(random.getstate()[1]),\n        "torch": torch.get_rng_state(),\n',
      ("tests/checkpoint/test_checkpoint_roundtrip.py::test_what_other_threads_draw_from_pythons_and_numpys_generators_is_not_captured",
       "tests/train/test_train_growth.py::test_a_run_grows_through_a_fade_and_a_stop_in_the_middle_of_it_continues_bitwise")),
    M("ckpt_format_2_rng_refused", "checkpoint/rng.py",
      "if version <= _GLOBAL_STATES_UNTIL:", "if version < _GLOBAL_STATES_UNTIL:",
      ("tests/checkpoint/test_checkpoint_resumable.py::test_a_format_2_checkpoints_python_and_numpy_states_are_checked",)),
    M("ckpt_format_2_python_rng_restored", "checkpoint/rng.py",
      '    torch.set_rng_state(state["torch"])\n',
      '    if "python" in state:\n'
      '        random.setstate((3, tuple(state["python"]["state"]), state["python"]["gauss_next"]))\n'
      '    torch.set_rng_state(state["torch"])\n',
      ("tests/checkpoint/test_checkpoint_resumable.py::test_a_version_1_checkpoint_with_its_whole_nested_config_verifies_and_resumes",)),
    M("ckpt_cuda_rng_size_unchecked", "checkpoint/rng.py",
      "tensor(state, where, torch.uint8, (_CUDA_STATE_BYTES,))", "pass",
      ("tests/checkpoint/test_checkpoint_resumable.py::test_verify_and_resume_agree",)),
    M("ckpt_adam_moment_shape_unchecked", "checkpoint/resumable.py",
      'tensor(entry["exp_avg"], f"{where}/exp_avg", dtype, shape)', 'entry["exp_avg"]',
      ("tests/checkpoint/test_checkpoint_resumable.py::test_verify_and_resume_agree",)),
    M("ckpt_resume_skips_the_validator", "checkpoint/__init__.py",
      "        return read(path, check_state)\n", "        return read(path, False)\n",
      ("tests/checkpoint/test_checkpoint_resumable.py::test_verify_and_resume_agree",)),
    M("ckpt_read_whole_before_size_compared", "checkpoint/store.py",
      "        if found != size:\n            raise InvalidCheckpoint(_size_problem(name, found, size))\n"
      "        data = file.read(size + 1)", "        data = file.read()",
      ("tests/hostile/test_hostile_checkpoint.py",)),
    M("ckpt_copy_under_another_name_not_a_checkpoint", "checkpoint/inspect.py",
      "if path.name.startswith(store.PREFIX) or os.path.lexists(path / store.MANIFEST):",
      "if path.name.startswith(store.PREFIX):",
      (INSPECT + "test_verify_takes_a_copied_checkpoint_under_any_name_and_checks_it_as_one",)),
    M("diff_snapshot_against_checkpoint_g", "compare/comparison.py", '{FORMAT: "G_ema",', '{FORMAT: "G",',
      (DIFF_SNAPSHOTS + "test_a_snapshot_against_a_checkpoint_is_compared_with_its_g_ema",)),
    M("diff_snapshot_against_discriminator_compared", "compare/comparison.py", "        if a.format != b.format:\n",
      "        if False:\n", (DIFF_SNAPSHOTS + "test_files_that_cannot_be_compared_are_refused_in_one_line",)),
    M("rundir_damaged_config_of_the_run_skipped", "train/rundir.py",
      "            if _named_like(run, key):", "            if False:",
      ("tests/train/test_train_rundir.py",)),
    # Which run a rerun continues, and lengths rounded up to whole batches.
    M("run_choice_same_command_not_first", "train/rundir.py",
      '            return Choice(run.path, run.config, "same command")', "            pass",
      (RUN_CHOICE + "test_a_rerun_continues_its_own_command_before_a_newer_run_of_the_same_maths",)),
    M("run_choice_explanations_compared", "train/rundir.py", "keep=lambda path: path not in _EXPLANATIONS",
      "keep=lambda path: True",
      (RUN_CHOICE + "test_a_rerun_continues_its_own_command_before_a_newer_run_of_the_same_maths",)),
    M("run_choice_auto_not_as_continuing", "train/rundir.py", "    p = cfg.precision\n", "    return cfg\n",
      (RUN_CHOICE + "test_auto_precision_is_compared_as_continuing_makes_it",)),
    M("run_choice_other_maths_continued", "train/rundir.py", "    if same_shapes and cfg.run.allow_config_change:",
      "    if same_shapes:", (RUN_CHOICE + "test_other_maths_start_a_new_run_and_name_the_run_left_alone",)),
    M("lengths_rounded_down", "train/resolver.py", "batches = -(-whole // batch)", "batches = whole // batch",
      ("tests/train/test_train_lengths.py::test_round_up_to_batches_equals_exact_arithmetic",)),
    M("lengths_decimal_rounding_moved", "train/resolver.py", "if abs(nimg - whole) < 1e-6 else",
      "if False else", ("tests/train/test_train_lengths.py::test_round_up_to_batches_equals_exact_arithmetic",)),
    M("pool_left_early_waits_for_every_task", "data/pool.py", "executor.shutdown(wait=True, cancel_futures=True)",
      "executor.shutdown(wait=True, cancel_futures=False)",
      ("tests/data/test_data_pool.py::test_an_exception_between_a_tasks_registration_and_its_queueing_ends_the_map_"
       "without_hanging",)),
    # Hostile datasets: the readers' bounds and checks (tests in tests/data/test_data_bounds.py).
    M("zip_member_size_cap_skipped", "data/files.py", "if info.file_size > cap:", "if False:",
      ("tests/data/test_data_bounds.py::test_a_member_declaring_more_than_an_image_may_take_is_refused_from_the_"
       "directory", "tests/data/test_data_bounds.py::test_a_member_that_inflates_past_the_cap_is_not_read")),
    M("zip_overlap_allowed", "data/files.py", "if any(end > start for", "if not any(end > start for",
      ("tests/data/test_data_bounds.py::test_members_sharing_their_data_are_refused",)),
    M("zip_any_compression_method", "data/files.py", "if info.compress_type not in _READABLE_METHODS:",
      "if False:", ("tests/data/test_data_bounds.py::test_only_stored_and_deflated_unencrypted_members_are_read",)),
    M("image_header_size_unchecked", "data/images.py", "if max_side is not None and max(header.size) > max_side:",
      "if False:", ("tests/data/test_data_bounds.py::test_an_image_header_larger_than_the_dataset_is_refused_"
                    "before_decoding",)),
    M("label_bound_skipped", "data/labels.py",
      "bad = next((value for value in values if not 0 <= value < classes), None)", "bad = None",
      ("tests/data/test_data_bounds.py::test_malformed_dataset_json_is_one_user_error_naming_it[class-5-of-3-images]",
       "tests/data/test_data_bounds.py::test_malformed_dataset_json_is_one_user_error_naming_it[too-few-label-names]")),
    M("dataset_json_negative_label_accepted", "data/labels.py", "if not 0 <= value < classes", "if not value < classes",
      ("tests/data/test_data_bounds.py::test_malformed_dataset_json_is_one_user_error_naming_it[class-minus-1]",)),
    M("csv_negative_label_accepted", "data/labelling.py", "elif _NEGATIVE_INTEGER.fullmatch(label):", "elif False:",
      ("tests/data/test_data_bounds.py::test_a_negative_label_is_refused_by_dataset_build_naming_its_file",)),
    M("metadata_cap_skipped", "data/labels.py", "return min(_MAX_BYTES, _BASE_BYTES + _BYTES_PER_IMAGE * image_count)",
      "return 2**40", ("tests/data/test_data_bounds.py::test_dataset_json_past_its_cap_is_refused_before_parsing",)),
    M("fast_header_validation_skipped", "data/fastformat.py", "problem = header_problem(header)", "problem = None",
      ("tests/data/test_data_bounds.py::test_one_header_check_for_every_reader_of_the_fast_format",)),
    M("fast_header_length_unchecked", "data/fastformat.py", "offset + length == size and length <= MAX_HEADER_BYTES",
      "True", ("tests/data/test_data_bounds.py::test_fast_prefix_and_class_indices_are_checked_before_use",)),
    M("fast_class_indices_unchecked", "data/fastformat.py", "problem = labels.class_problem(classes, len(",
      "problem = None and (classes, len(",
      ("tests/data/test_data_bounds.py::test_fast_prefix_and_class_indices_are_checked_before_use",)),
    M("build_leaves_partial_output", "data/build.py", "for path in (self.partial, self.report_partial):",
      "for path in ():",
      ("tests/data/test_data_bounds.py::test_a_write_error_in_the_fast_format_and_the_report_leaves_nothing",)),
    M("build_queue_unbounded_in_bytes", "data/pool.py", " or sum(sizes) > _IN_FLIGHT_BYTES", "",
      ("tests/data/test_data_bounds.py::test_files_queued_for_the_pool_are_bounded_in_bytes",)),
    # A signal to every process of the run (process group, SLURM job step): workers leave it to the main process.
    M("workers_die_of_group_signals", "data/loader.py", "loader = WorkerLoader(",
      "loader = torch.utils.data.DataLoader(",
      ("tests/data/test_data_loader.py::test_workers_leave_group_signals_to_this_process",
       "tests/test_signal_group.py::test_group_signals_to_one_process_checkpoint_and_the_rerun_continues")),
    M("workers_forked_before_signals_held", "data/loader.py", "with preempt.signals_held():  # workers",
      "with contextlib.nullcontext():  # workers",
      ("tests/data/test_data_loader.py::test_workers_leave_group_signals_to_this_process",)),
    M("workers_deaf_to_their_parent", "preempt.py", "info.si_signo == signal.SIGTERM and info.si_pid == owner",
      "info.si_signo == signal.SIGTERM and info.si_pid == -1",
      ("tests/data/test_data_loader.py::test_workers_leave_group_signals_to_this_process",)),
    M("workers_outlive_their_parent", "preempt.py", "    dist.parent_death_signal(signal.SIGKILL)\n", "",
      ("tests/checkpoint/test_checkpoint_preempt.py::test_a_worker_outlives_others_signals_but_not_its_parent",)),
    M("read_ahead_thread_takes_signals", "data/readahead.py", "with preempt.signals_held():\n            self._thread",
      "if True:\n            self._thread",
      ("tests/data/test_data_readahead.py::test_the_reading_thread_never_takes_sigterm_or_sigint",)),
    M("forwarded_sigint_is_a_second_ctrl_c", "preempt.py", "elif now - self._first_sigint >= self._repeat_after_s:",
      "else:",
      ("tests/checkpoint/test_checkpoint_preempt.py::test_one_sigint_arriving_twice_at_once_is_one_interrupt",)),
    M("adopted_sigint_counts_as_this_ranks", "preempt.py", "self.requested, self.signal_number = True, signum",
      "self.requested, self.signal_number, self._first_sigint = True, signum, 0.0",
      ("tests/checkpoint/test_checkpoint_preempt.py::test_a_sigint_adopted_from_another_rank_is_not_this_process_"
       "first_ctrl_c",)),
    # Network files: the allow-list unpickler, the architecture limits, the snapshot checksum (hostile inputs).
    M("pickle_build_on_tensors", "interop/official_pickle.py",
      "        if self.build_numpy(target, state):\n            return\n",
      "        if self.build_numpy(target, state) or isinstance(target, torch.Tensor):\n"
      "            return None if self.build_numpy(target, state) else target.__setstate__(state)\n",
      ("tests/interop/test_interop_bounded.py::test_build_on_a_tensor_is_refused_and_nothing_is_written",)),
    M("pickle_storage_check_skipped", "interop/official_pickle.py", "        _check_storages(unpickler.built)\n", "",
      ("tests/interop/test_interop_bounded.py::test_the_storage_check_catches_a_widened_tensor_whatever_widened_it",)),
    M("pickle_declared_length_unchecked", "interop/restricted_pickle.py", "if not 0 <= n <= self.left:", "if n < 0:",
      ("tests/interop/test_interop_bounded.py::test_declared_lengths_are_compared_with_the_file",)),
    M("pickle_keys_not_plain", "interop/restricted_pickle.py", "if not all(type(k) in PLAIN_KEYS for k in keys):",
      "if False:",
      ("tests/interop/test_interop_bounded.py::test_keys_are_plain_values_whose_hashing_costs_their_length",)),
    M("pickle_marked_items_on_anything", "interop/restricted_pickle.py", "        if type(target) not in types:",
      '        if opcode in ("SETITEM", "APPEND") and type(target) not in types:',
      ("tests/interop/test_interop_bounded.py::test_items_after_a_mark_go_only_into_their_own_kind_of_container",)),
    M("pickle_bytearray_allocated", "interop/numpy_pickle.py",
      "        self.append(InBandBuffer(self.read(size)))",
      "        self.append(InBandBuffer(bytes(bytearray(size))[:0] + self.read(size)))",
      ("tests/interop/test_interop_bounded.py::test_a_bytearray_is_read_only_as_far_as_the_file_holds_and_kept_only"
       "_in_an_array",)),
    # --dry-run: the checks of the run it describes.
    M("dry_run_skips_resume_checks", "train/command.py", "notes = check_start(config, source)[2]", "notes = []",
      ("tests/train/test_train_resume_options.py::test_a_dry_run_makes_the_checks_of_the_run_it_describes",)),
    M("tick_of_the_last_boundary", "train/loop.py", "    return -(-cur_nimg // tick_nimg)",
      "    return cur_nimg // tick_nimg",
      ("tests/train/test_train_resume_options.py::test_a_run_that_ends_off_a_tick_boundary_reports_the_next_tick",)),
    M("ctrl_c_called_a_preemption", "train/loop.py", 'if signal_number == signal.SIGINT else "stopping on signal"',
      'if signal_number == -1 else "stopping on signal"',
      ("tests/report/test_report_page.py::test_a_run_stopped_by_ctrl_c_says_so_in_its_log_and_its_report",)),
    M("report_left_running_at_the_end", "train/loop.py", '                _closing_report(cfg, run_dir, log.record)  #',
      "                pass  #",
      ("tests/report/test_report_page.py::test_train_rewrote_the_report_at_each_snapshot_and_once_it_ended",)),
    M("tracker_location_unsaid", "track/session.py",
      '        self._run.say(f"tracking: {self.name} run {run_id} in {self._tracker.location}")\n', "",
      ("tests/track/test_track_mlflow.py::test_a_training_run_and_its_resume_fill_one_mlflow_run",)),
    M("mlflow_info_lines_on_stderr", "track/mlflow_tracker.py",
      "            logging.getLogger(logger).setLevel(logging.WARNING)",
      "            pass", ("tests/track/test_track_mlflow.py::test_without_a_uri_the_store_is_in_the_run_folder",)),
    M("project_summary_before_tuning", "project/run.py", '"folder": str(folder), **record["final"], **tuned_final}',
      '"folder": str(folder), **record["final"]}',
      ("tests/project/test_project_cli.py::test_a_short_run_writes_every_file_and_says_what_it_did",)),
    M("estimate_from_the_first_step", "train/logs.py",
      "            self._first_step = (now, cur_nimg)\n            return\n",
      "            self._first_step = (self._start_time, 0)\n",
      ("tests/train/test_train_estimate.py::test_the_estimate_comes_once_after_ten_seconds_of_steps_from_the_end_"
       "of_the_first",)),
    M("long_stage_not_estimated", "progress.py",
      "        if not self._estimated and self.elapsed() >= ESTIMATE_AFTER_S:", "        if False:",
      ("tests/test_progress.py::test_a_counted_stage_that_turns_out_long_says_how_long_once_with_the_faster_setting",)),
    M("explore_shows_only_the_first_network", "explore/static/explore.js", "    box.checked = true;",
      "    box.checked = net.index === 0;",
      ("tests/explore/test_explore_browser.py::test_every_network_given_is_shown_at_start",)),
    M("server_failure_told_to_verify", "train/loop.py", "                    if isinstance(error, ServerError):",
      "                    if False:",
      ("tests/train/test_train_shards.py::test_a_server_failing_mid_run_stops_it_with_one_line_after_a_checkpoint",)),
    M("feature_maps_claim_the_image_command", "explore/app.py",
      '        else:\n            headers["X-Ganforge-Command"]',
      '        if True:\n            headers["X-Ganforge-Command"]',
      (EXPLORE_API + "test_feature_maps_show_the_first_channels_of_the_chosen_layer_side_by_side",)),
    M("label_vectors_taken_as_classes", "generate/labels.py",
      'vectors = space is not None and space["kind"] == "vectors"', "vectors = False",
      ("tests/train/test_train_label_vectors.py::test_a_run_conditioned_on_label_vectors_from_shards",)),
    M("snapshot_label_kind_not_read", "snapshot.py", "        net.label_space = label_space(meta, net.c_dim)",
      "        net.label_space = None",
      ("tests/train/test_train_label_vectors.py::test_a_run_conditioned_on_label_vectors_from_shards",)),
    # First-hour fixes: a greyscale dataset stays greyscale, export makes --out's folder, the project video's size,
    # the demo's preset is not warned about.
    M("build_source_channels_ignored", "data/build.py", "channels=options.channels or source_channels(files.meta)",
      "channels=options.channels or 3",
      ("tests/data/test_data_shards.py::test_a_greyscale_dataset_converted_to_another_format_stays_greyscale",)),
    M("export_out_folder_not_made", "export/run.py", "    options.out.parent.mkdir(parents=True, exist_ok=True)",
      "    pass", ("tests/export/test_export_nonsquare.py::test_a_tall_generator_with_noise_inputs_and_uint8_output",)),
    M("project_video_size_ignored", "project/run.py", 'pixels = writers.Pixels(size or max(VIDEO_SIZE,',
      'pixels = writers.Pixels(None or max(VIDEO_SIZE,',
      ("tests/project/test_project_cli.py::test_the_video_is_as_large_as_asked_each_pixel_a_block",)),
    M("preset_overlay_first_field_only", "families/preset.py",
      'dict.fromkeys(row_field.metadata.get("sets", ()), value)',
      'dict.fromkeys(row_field.metadata.get("sets", ())[:1], value)',
      ("tests/train/test_train_dry_run_recorded.py::test_dry_run_config_equals_the_recorded_one",)),
    M("tiny_preset_ada_at_paper_speed", "families/preset.py", 'ada_kimg: float | None = sets("augment.ada_kimg")',
      "ada_kimg: float | None = None",
      ("tests/train/test_train_config.py::test_ada_speed_and_target_reach_the_controller",)),
    M("small_data_note_as_warning", "config/describe.py", 'kind = "note" if missing == [PRETRAINED_START] else',
      'kind = "warning" if missing == [PRETRAINED_START] else',
      ("tests/train/test_train_pretrained.py::test_a_small_dataset_without_the_recipe_is_warned_about",)),
    # Each trained network carries its own clip value and says whether ranks average its buffers.
    M("network_clip_unused", "train/phases.py", "        clip = network.clip\n", "        clip = None\n",
      ("tests/train/test_train_clipping.py",)),
    M("network_d_clip_is_g_clip", "train/phases.py", 'clip = o.clip_grad_g if name == "G" else o.clip_grad_d',
      "clip = o.clip_grad_g", ("tests/train/test_train_clipping.py",)),
    M("g_buffers_not_averaged", "train/phases.py", 'averages_buffers=name == "G")', "averages_buffers=False)",
      ("tests/train/test_train_two_ranks.py",)),
    M("sweep_schema_race_not_retried", "sweep/storage.py", "            if not _lost_schema_race(error):",
      "            if True:", ("tests/sweep/test_sweep_parts.py",)),
    M("sweep_schema_race_any_error", "sweep/storage.py",
      'return isinstance(error, sqlalchemy.exc.ProgrammingError) and "already exists" in str(error)',
      "return isinstance(error, sqlalchemy.exc.ProgrammingError)",
      ("tests/sweep/test_sweep_parts.py::test_only_a_lost_race_to_create_the_tables_is_tried_again",)),
    M("explore_listens_on_a_closed_socket", "explore/server.py", "    if sock.fileno() != -1:", "    if True:",
      ("tests/explore/test_explore_connections.py::test_a_server_shut_as_soon_as_it_started_ends_without_an_error",)),
    M("explore_uvicorn_owns_signals_too", "explore/server.py", "    return SignalFreeServer(config)",
      "    return uvicorn.Server(config)", ("tests/explore/test_explore_connections.py",)),
    M("second_group_reads_first_groups_keys", "dist.py",
      "    return tdist.PrefixStore(f\"group-{attempt.add(f'groups-joined-by-rank-{rank}', 1)}\", attempt)",
      "    return attempt", ("tests/test_scaleout.py::"
                          "test_each_group_a_process_joins_sees_none_of_its_earlier_groups_keys_and_ranks_agree_on_it",)),
    M("memory_advice_ignores_the_family", "train/step_memory.py",
      "can_recompute = family_of(cfg.model.generator).recomputes and", "can_recompute = True and",
      ("tests/train/test_step_memory.py::test_train_refuses_a_step_no_micro_batch_fits_with_the_figure_and_exit_2",)),
    M("project_takes_label_vectors_as_classes", "project/run.py",
      'if space is not None and space["kind"] == "vectors":', "if False:",
      ("tests/train/test_train_label_vectors.py::test_a_run_conditioned_on_label_vectors_from_shards",)),
    # --network RUNDIR / a checkpoint folder: the newest network, and G_ema.
    M("network_folder_oldest_snapshot", "interop/sources.py", "        return snapshots[-1]",
      "        return snapshots[0]", (GENERATE_FOLDERS,)),
    M("network_checkpoint_g_not_g_ema", "interop/sources.py", "from_checkpoint(trained).networks[which]",
      'from_checkpoint(trained).networks["G"]', (GENERATE_FOLDERS,)),
    # The Python API: the commands' conventions.
    M("api_projects_from_another_seed", "api.py", "seed: int = SEED", "seed: int = 0",
      ("tests/test_api.py::test_project_finds_the_latent_the_command_finds",)),
    M("api_rotation_in_radians", "api.py", "input_transform((tx, ty), math.radians(rotate))",
      "input_transform((tx, ty), rotate)",
      ("tests/test_api.py::test_an_official_stylegan3_pickle_moves_as_nvlabs_code_moves_it",)),
    # Model families: what the records say each family's networks can do.
    M("stylegan3_grows", "families/stylegan3/traits.py", "    grows=False,\n    non_square=False,",
      "    grows=True,\n    non_square=False,",
      ("tests/train/test_train_growth.py::test_growth_where_the_networks_cannot_grow_is_refused_with_the_fix",)),
    M("r3gan_d_has_layouts", "families/r3gan/traits.py", "    d_layouts=False,", "    d_layouts=True,",
      (LAYOUTS + "test_a_layout_the_network_does_not_have_is_refused_with_the_fix",)),
    # numpy values in NVlabs' PyTorch pickles: StyleGAN3's arrays, exactly where and as numpy writes them.
    M("official_arrays_anywhere", "interop/official_pickle.py", "        _check_numpy_places(data)\n", "",
      (NUMPY_REFUSAL + "test_an_array_anywhere_else_is_refused",)),
    M("official_array_place_by_name_only", "interop/official_pickle.py",
      "(value.class_name, name) in ARRAY_PLACES", "name in {n for _, n in ARRAY_PLACES}",
      (NUMPY_REFUSAL + "test_an_array_anywhere_else_is_refused",)),
    M("official_array_any_shape", "interop/official_pickle.py",
      "if array is None or array.shape != SIZE_PAIR or array.dtype.kind not in \"iu\":", "if array is None:",
      (NUMPY_REFUSAL + "test_in_its_place_only_a_pair_of_integers",)),
    M("official_array_never_built_accepted", "interop/official_pickle.py",
      "if array is None or array.shape != SIZE_PAIR", "if array is not None and array.shape != SIZE_PAIR",
      (NUMPY_REFUSAL + "test_in_its_place_only_a_pair_of_integers",)),
    M("numpy_reconstruct_any_class", "interop/numpy_pickle.py", "if cls is not NDARRAY or shape != (0,)",
      "if shape != (0,)", (NUMPY_REFUSAL + "test_what_numpy_never_writes_is_refused",)),
    M("numpy_frombuffer_any_order", "interop/numpy_pickle.py", 'if order not in ("C", "F"):', "if False:",
      (NUMPY_REFUSAL + "test_what_numpy_never_writes_is_refused",)),
    M("numpy_frombuffer_bytes_uncounted", "interop/numpy_pickle.py",
      "        self.count_array_bytes(len(data))\n        return ArrayRecord", "        return ArrayRecord",
      (NUMPY_REFUSAL + "test_bytes_shared_through_the_memo_make_no_more_array_than_the_file_holds",)),
    M("official_family_not_named", "interop/official_pickle.py", '("StyleGAN3", ("SynthesisInput",)),', "",
      (NUMPY_REFUSAL + "test_a_refused_global_names_the_family_the_file_had_shown",)),
    # TensorFlow-era pickles: the allow-list unpickler's guards, the kind by content, the variable mapping.
    M("tf_build_on_anything", "interop/tf_pickle.py",
      "        elif not self.build_numpy(target, state):\n            self.refuse_build(target)",
      "        elif not self.build_numpy(target, state):\n            pass",
      (TF_REFUSAL + "test_build_acts_only_on_networks_arrays_and_dtypes_and_once",)),
    M("tf_array_bytes_unbounded", "interop/numpy_pickle.py", "if self.array_bytes > self.size:", "if False:",
      (TF_REFUSAL + "test_bytes_shared_through_the_memo_make_no_more_array_than_the_file_holds",)),
    M("tf_array_size_unchecked", "interop/numpy_pickle.py",
      "if count < 0 or count * dtype.dtype.itemsize != len(data):", "if count < 0:",
      (TF_REFUSAL + "test_an_array_holds_exactly_the_bytes_of_its_shape",)),
    M("tf_dtype_any_code", "interop/numpy_pickle.py", "if code not in NUMERIC_CODES or", "if not code or",
      (TF_REFUSAL + "test_an_array_holds_exactly_the_bytes_of_its_shape",)),
    M("tf_variables_share_arrays", "interop/tf_pickle.py", "if name in variables or id(value) in arrays:",
      "if name in variables:", (TF_REFUSAL + "test_every_variable_holds_an_array_of_its_own",)),
    M("tf_kind_not_told_apart", "interop/network.py",
      "{TF_NETWORK_MODULE: TENSORFLOW, R3GAN_MODULE: R3GAN}.get(", "{R3GAN_MODULE: R3GAN}.get(",
      ("tests/interop/test_interop_network.py::test_kinds_by_content",)),
    M("tf_up_conv_not_flipped", "interop/tf_stylegan2.py", "lambda t: t.flip(0, 1).permute(3, 2, 0, 1)",
      "lambda t: t.permute(3, 2, 0, 1)", (TF_REFERENCE,)),
    M("tf_style_bias_without_one", "interop/tf_stylegan2.py", '"mod_bias": (lambda s: s, lambda t: t + 1)',
      '"mod_bias": (lambda s: s, lambda t: t)', (TF_REFERENCE,)),
    M("tf_noise_inputs_swapped", "interop/tf_stylegan2.py", '(5 if layer == "conv0" else 4)',
      '(4 if layer == "conv0" else 5)', (TF_REFERENCE,)),
    M("tf_channel_base_not_doubled", "interop/tf_stylegan2.py", "return 2 * fmap_base if", "return fmap_base if",
      (TF_REFERENCE,)),
    M("tf_settings_from_g_alone", "interop/tf_stylegan2.py",
      'settings(f"{path}: ", _kwargs(G.components["synthesis"])', 'settings(f"{path}: ", _kwargs(G)',
      (TF_REFUSAL + "test_settings_are_read_from_the_network_that_takes_them",)),
    M("module_walk_revisits", "interop/official.py", "if id(rec) in seen:", "if False:",
      ("tests/interop/test_interop_bounded.py::test_a_module_reached_twice_is_refused_after_one_visit",)),
    M("rosinality_zip_crc_unread", "interop/rosinality.py", "while member.read(1 << 20):", "while False:",
      ("tests/interop/test_interop_bounded.py::test_zip_members_are_checked_before_torch_reads_them",)),
    M("rosinality_legacy_read_unbounded", "interop/rosinality.py",
      "if size is not None and size > max(self.size - self.tell(), PROBE_BYTES):", "if False:",
      ("tests/interop/test_interop_bounded.py::test_lengths_declared_in_a_legacy_checkpoint_are_compared_with_the_file",)),
    M("rosinality_repeated_elements_accepted", "interop/rosinality.py",
      "if value.numel() * value.element_size() > value.untyped_storage().nbytes():", "if False:",
      ("tests/interop/test_interop_bounded.py::test_rosinality_tensors_repeating_their_elements_are_refused",)),
    M("shown_text_unbounded", "limits.py",
      'return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."', "return text",
      ("tests/test_snapshot.py::test_metadata_is_parsed_within_bounds",)),
    M("architecture_limits_skipped", "snapshot.py",
      "problems += architecture_problems({k: v for k, v in arch.items() if k in takes})", "problems += []",
      ("tests/test_snapshot.py::test_the_limits_are_checked_before_anything_is_built",
       "tests/interop/test_interop_bounded.py::test_constructor_arguments_beyond_the_limits_are_refused_before_building")),
    M("parameter_count_unchecked", "snapshot.py", "if count * MIN_PARAMETER_BYTES > file_bytes:", "if False:",
      ("tests/test_snapshot.py::test_an_architecture_the_file_cannot_hold_is_refused_before_it_is_built",)),
    M("snapshot_metadata_outside_hash", "snapshot.py",
      "    h.update(json.dumps(fields, sort_keys=True, ensure_ascii=True).encode())\n", "",
      ("tests/test_snapshot.py::test_the_checksum_covers_the_metadata",)),
    M("unsigned_snapshot_accepted", "snapshot.py",
      "    else:\n        raise UserError(\n            f\"{path}: {kind.noun} without",
      "    else:\n        return\n        raise UserError(\n            f\"{path}: {kind.noun} without",
      ("tests/test_snapshot.py::test_a_snapshot_without_a_checksum_is_refused",)),
    M("nonfinite_weights_accepted", "snapshot.py",
      "damaged = [k for k, v in tensors.items() if not torch.isfinite(v).all()]", "damaged = []",
      ("tests/test_snapshot.py::test_weights_that_are_not_finite_are_refused",)),
    M("snapshot_metadata_unchecked_silently", "snapshot.py", "        if ok:\n            warnings.warn(",
      "        if False:\n            warnings.warn(",
      ("tests/test_snapshot.py::test_a_file_stripped_of_its_content_checksum_warns_that_its_metadata_is_unchecked",)),
    M("snapshot_json_length_unbounded", "snapshot.py", "elif len(text) > MAX_JSON_CHARS:", "elif False:",
      ("tests/test_snapshot.py::test_metadata_is_parsed_within_bounds",)),
    M("snapshot_json_depth_unbounded", "snapshot.py", "if _depth(value) > MAX_JSON_DEPTH:", "if False:",
      ("tests/test_snapshot.py::test_metadata_is_parsed_within_bounds",)),
    M("snapshot_tensor_count_unbounded", "snapshot.py", "if len(names) > MAX_TENSORS:", "if False:",
      ("tests/test_snapshot.py::test_more_tensors_than_any_network_has_are_refused_by_their_count",)),
    M("resume_weights_checked_after_the_run_folder", "train/resume.py",
      'return Source("weights", resume, pretrained=describe(read_pretrained(paths)))',
      'return Source("weights", resume, pretrained=None)',
      ("tests/hostile/test_hostile_networks.py::test_hostile_network_files_are_refused_by_every_reader",)),
    # Fine-tuning from a pretrained file: its architecture, its ADA p, and the checks of what contradicts it.
    M("pretrained_architecture_from_the_preset", "train/resolver.py",
      "recorded, pretrained_fields(pretrained) if pretrained else {})", "recorded, {})",
      (PRETRAINED + "test_the_architecture_hash_and_plan_come_from_the_pickle",)),
    M("pretrained_p_not_carried", "train/checkpointing.py", "        trainer.augment.p.fill_(pretrained.augment_p)",
      "        pass", (PRETRAINED + "test_a_run_starts_from_each_kind_of_source_and_resumes_bitwise",)),
    M("bench_declares_gamma_again", "bench/options.py", "    steps: int = option(MEASURE,",
      '    gamma: float | None = option(MEASURE, "R1 weight.", default=None)\n    steps: int = option(MEASURE,',
      ("tests/test_options_declared.py::test_no_two_declarations_make_one_flag",)),
    M("fine_tuning_ema_ramps_up", "train/resolver.py", "return None if pretrained is not None else preset.ema_rampup",
      "return preset.ema_rampup", (FINE_TUNING_SCHEDULES,)),
    M("fine_tuning_ada_at_scratch_speed", "train/resolver.py",
      '"augment.ada_kimg": FINE_TUNING_ADA_KIMG if pretrained is not None else None', '"augment.ada_kimg": None',
      (FINE_TUNING_SCHEDULES,)),
    M("run_of_other_data_continued", "train/resume.py", 'if not data_name or config["data"].get("name") == data_name:',
      "if True:", (PRETRAINED + "test_a_run_or_checkpoint_of_other_data_is_a_fine_tuning_start",)),
    M("checkpoint_of_other_data_continued", "train/resume.py",
      'if not data_name or trained.fields["data.name"] == data_name:', "if True:",
      (PRETRAINED + "test_a_run_or_checkpoint_of_other_data_is_a_fine_tuning_start",)),
    M("fine_tuning_checkpoint_g_ema_from_g", "interop/pretrained.py",
      'networks = {"G": G, "G_ema": copy.deepcopy(G), "D": D}', 'networks = {"G": G, "G_ema": G, "D": D}',
      (PRETRAINED + "test_a_run_or_checkpoint_of_other_data_is_a_fine_tuning_start",)),
    M("outdir_compared_as_typed", "train/rundir.py", '"run": {**old["run"], "outdir": cfg.run.outdir, ',
      '"run": {**old["run"], ', (RUN_CHOICE + "test_the_same_folders_spelled_another_way_are_the_same_command",)),
    M("outdir_recorded_as_typed", "train/resolver.py", '"run.outdir": absolute(o.outdir),',
      '"run.outdir": str(o.outdir),', (RUN_CHOICE + "test_the_same_folders_spelled_another_way_are_the_same_command",)),
    M("pretrained_dataset_size_unchecked", "train/pretrained.py",
      "if (cfg.data.resolution, tuple(cfg.data.aspect), cfg.data.channels) != (res, aspect, channels):", "if False:",
      (PRETRAINED + "test_what_contradicts_the_pickle_is_refused_naming_both",)),
    M("pretrained_p_range_unchecked", "interop/pretrained.py", "(math.isfinite(value) and 0 <= value <= 1)",
      "math.isfinite(value)", (PRETRAINED + "test_what_contradicts_the_pickle_is_refused_naming_both",)),
    M("frozen_g_mapping_still_steps", "nets/configured.py", 'if name.startswith("mapping.")} if freeze_g_mapping',
      'if name.startswith("mapping.")} if False',
      ("tests/train/test_train_freeze.py::test_a_frozen_mapping_network_stays_bitwise_and_the_synthesis_trains",)),
    M("frozen_d_layers_still_step", "nets/configured.py", '"D": D.frozen_parameters(freeze_d)', '"D": set()',
      ("tests/train/test_train_freeze.py::test_frozen_layers_stay_bitwise_through_training_and_a_resume",)),
    # Outputs (generate, report, export, metrics): destinations, memory estimates, ranges, damaged run folders.
    M("destination_not_checked", "durable.py", "    if stat.S_ISREG(mode):\n        return",
      "    if True:\n        return",
      ("tests/test_durable.py::test_a_destination_that_is_not_a_regular_file_is_refused_and_left_as_it_was",)),
    M("failed_write_not_one_line", "durable.py", "        raise WriteError(write_problem(path, error)) from None\n"
      "    finally:", "        raise\n    finally:",
      ("tests/test_durable.py::test_a_real_full_disk_leaves_the_old_file_and_no_temporary",)),
    M("generate_outputs_checked_late", "generate/run.py", "            check_destination(options.outdir / name)",
      "            pass", ("tests/generate/test_generate_limits.py::"
                          "test_a_special_file_among_the_outputs_stops_generate_before_the_first_image",)),
    M("generate_memory_not_estimated", "generate/run.py",
      "    memory.check(needs, memory.available_host_bytes(), memory.available_device_bytes(device))\n", "",
      ("tests/generate/test_generate_limits.py::test_generate_checks_what_it_asks_against_the_memory_available_now",)),
    M("generate_trunc_not_range_checked", "generate/options.py", "        range=PSI,\n", "",
      ("tests/generate/test_generate_limits.py::test_trunc_must_be_a_finite_psi_in_range",)),
    M("generate_seed_digits_converted", "generate/typed.py",
      'return len(digits.lstrip("0")) > len(str(MAX_SEED)) or', "return",
      ("tests/generate/test_generate_limits.py::test_typed_values_are_repeated_short_and_each_problem_once",)),
    M("generate_grid_cells_left_black", "generate/problems.py", "if not o.interp and keys != cells:",
      "if not o.interp and keys > cells:",
      ("tests/generate/test_generate_options.py::"
       "test_a_grid_has_one_seed_per_cell_and_a_grid_of_loops_the_same_number_per_cell",
       "tests/generate/test_generate_cli.py::test_the_grid_of_the_issue_exits_2_naming_both_counts")),
    M("generate_fps_not_range_checked", "generate/options.py", "        range=FPS,\n", "",
      ("tests/generate/test_generate_options.py::test_fps_must_be_finite_positive_and_bounded",)),
    M("generate_loop_grid_transposed", "generate/writers.py", "cells.transpose(2, 0, 3, 1, 4, 5)",
      "cells.transpose(2, 1, 3, 0, 4, 5)",
      ("tests/generate/test_generate_modes.py::test_a_grid_of_loops_is_each_cells_own_loop_whatever_the_batch",)),
    M("generate_loop_cell_noise_from_next_seed", "generate/modes.py", "noise_seeds = keys.seeds[::per_cell]",
      "noise_seeds = keys.seeds[: len(paths)]",
      ("tests/generate/test_generate_modes.py::test_a_grid_of_loops_is_each_cells_own_loop_whatever_the_batch",)),
    M("generate_resize_filters_swapped", "generate/writers.py",
      '{"lanczos": PIL.Image.Resampling.LANCZOS, "nearest": PIL.Image.Resampling.NEAREST}',
      '{"lanczos": PIL.Image.Resampling.NEAREST, "nearest": PIL.Image.Resampling.LANCZOS}',
      ("tests/generate/test_generate_images.py::test_size_resamples_every_image_by_the_filter_asked_for",)),
    M("generate_size_not_estimated", "generate/needs.py", "    shown_hw = shown_size(made, o.size)\n",
      "    shown_hw = made\n",
      ("tests/generate/test_generate_limits.py::test_a_bigger_size_means_bigger_images_frames_and_files",)),
    M("generate_odd_mp4_frames_accepted", "generate/writers.py",
      'if container == "mp4" and (width % 2 or height % 2):', "if False:",
      ("tests/generate/test_generate_modes.py::test_what_a_container_cannot_hold_is_refused_before_anything_is_made",)),
    M("export_max_abs_diff_nan_accepted", "export/options.py",
      "        range=Range(0, MAX_PIXEL_DIFF),\n", "",
      ("tests/export/test_export_inputs.py::test_numbers_out_of_range_are_refused_where_they_are_parsed",)),
    M("export_check_memory_skipped", "export/run.py", "    _check_memory(module, options)\n", "",
      ("tests/export/test_export_inputs.py::test_a_fixed_batch_whose_check_does_not_fit_is_refused_with_the_figure",)),
    M("export_sensitivity_least_harmful_first", "export/sensitivity.py", "key=lambda effect: -effect.harm",
      "key=lambda effect: effect.harm",
      (INT8_CHOICE + "test_the_sensitivity_ranking_is_deterministic_and_is_each_layers_own_pixel_error",)),
    M("export_sensitivity_by_pixels_despite_features", "export/sensitivity.py",
      "return self.mse if self.feature_distance is None else self.feature_distance", "return self.mse",
      (INT8_CHOICE + "test_with_features_the_ranking_is_by_their_distance_not_by_pixels",)),
    M("export_keep_float_auto_ranks_by_pixels_when_the_check_measures_fid", "export/run.py",
      "features = checker.image_features if fid_images else None", "features = None",
      (INT8_CHOICE + "test_keep_float_auto_keeps_the_most_sensitive_layers_and_stops_at_the_first_set_that_passes",)),
    M("export_keep_float_auto_keeps_all_but_one", "export/sensitivity.py",
      "self.ranking[: len(self.attempts)]", "self.ranking[: len(self.layers) - 1]",
      (INT8_CHOICE + "test_keep_float_auto_tries_one_more_layer_after_each_failure_and_stops_with_one_layer_left",)),
    M("export_keep_float_auto_goes_on_after_a_pass", "export/run.py",
      "if not failed or not float_layers.record(figures):", "if not float_layers.record(figures):",
      (INT8_CHOICE + "test_keep_float_auto_keeps_the_most_sensitive_layers_and_stops_at_the_first_set_that_passes",)),
    M("export_fid_delta_without_the_eager_baseline", "export/check.py",
      '"fid_delta": fid_exported - reference.fid_eager,', '"fid_delta": fid_exported,',
      (EXPORT_CHECK + "test_the_fid_delta_and_kid_compare_with_eager_images_of_other_latents_measured_once",)),
    M("export_check_reference_remeasured", "export/check.py",
      "measure_eager = fid_images > 0 and self.reference is None", "measure_eager = fid_images > 0",
      (EXPORT_CHECK + "test_the_fid_delta_and_kid_compare_with_eager_images_of_other_latents_measured_once",)),
    M("export_qat_rounding_off_still_rounds_weights", "export/qat.py",
      "        return conv(x, weight, *args, **kwargs)\n",
      "        return conv(x, round_weight(weight, CONVOLUTIONS[conv], self.per_channel), *args, **kwargs)\n",
      (QAT + "test_fine_tuning_with_the_rounding_off_is_plain_fine_tuning_and_with_it_on_is_not",)),
    M("export_qat_depthwise_filters_rounded", "export/qat.py",
      "if func in CONVOLUTIONS and self.running and groups == 1:", "if func in CONVOLUTIONS and self.running:",
      (QAT_MATCHES,)),
    M("export_qat_transposed_weight_per_input_channel", "export/qat.py", "torch.conv_transpose2d: 1}",
      "torch.conv_transpose2d: 0}", (QAT_MATCHES + "[False-True]",)),
    M("export_qat_zero_point_not_an_integer", "export/qat.py",
      "zero = _rounded(self.zero_point.clamp(low, high))", "zero = self.zero_point.clamp(low, high)",
      (QAT_MATCHES,)),
    M("export_qat_learned_ranges_not_handed_to_the_quantizer", "export/quantize.py",
      'extra_options=SYMMETRY | ({"TensorQuantOverrides": overrides} if overrides else {}),',
      "extra_options=SYMMETRY,", (QAT_MATCHES,)),
    M("export_qat_memory_not_checked", "export/run.py",
      "        memory.check([qat_need], memory.available_host_bytes(), None)\n", "",
      ("tests/export/test_export_inputs.py::test_a_fine_tuning_that_does_not_fit_is_refused_with_the_figure",)),
    M("export_qat_checked_against_the_fine_tuned_copy", "export/run.py",
      "checker = check.Check(module, options.check,", "checker = check.Check(exported, options.check,",
      (QAT + "test_export_with_qat_shows_its_stages_and_records_the_fine_tuning_on_the_card",)),
    M("export_calibration_not_counted", "export/quantize.py", "        self.stage.update(self.running)\n",
      "        self.stage.update(0)\n", (EXPORT_PROGRESS + TERMINAL_CARD,)),
    M("export_card_calibration_not_rounded_to_batches", "export/quantize.py",
      "return module.batch, -(-count // module.batch) * module.batch", "return module.batch, count",
      (EXPORT_PROGRESS + TERMINAL_CARD,)),
    M("progress_lines_every_interval", "progress.py", "            report_at *= 2\n",
      "            report_at += FIRST_REPORT_S\n",
      ("tests/test_progress.py::test_a_long_stage_off_a_terminal_reports_at_doubling_intervals",)),
    M("progress_lines_to_stderr", "progress.py", "print(line, file=self._line_stream, flush=True)",
      "print(line, file=self._bar_stream, flush=True)",
      ("tests/export/test_export_onnx.py::test_an_export_failing_its_check_exits_2_writes_nothing_and_logs_its_stages",)),
    M("metrics_images_not_counted", "metrics/features.py", "            stage.update(len(batch) * dist.world_size())",
      "            stage.update(0)", (METRICS_PROGRESS + "test_on_a_terminal_each_stage_of_the_work_has_a_bar",)),
    M("metrics_reading_not_timed", "metrics/features.py", "            with stage.part(source):",
      "            with stage.part(None):",
      (METRICS_PROGRESS + "test_piped_metrics_write_a_line_as_each_stage_starts_and_ends",)),
    M("metrics_whole_metric_drawn_over_its_stages", "metrics/registry.py", 'ev.stage(f"metrics: {name}", bar=False)',
      'ev.stage(f"metrics: {name}", bar=True)',
      (METRICS_PROGRESS + "test_on_a_terminal_each_stage_of_the_work_has_a_bar",)),
    M("report_stats_not_reduced_to_numbers", "report/rundata.py", "    record = _numbers(value)\n",
      "    record = dict(value)\n",
      ("tests/report/test_report_damaged.py::test_stats_lines_that_are_not_tick_records_are_counted_and_skipped",)),
    M("report_config_not_an_object_kept", "report/rundata.py",
      "    if not isinstance(value, dict):\n        _warn(path, f\"is not",
      "    if value is None:\n        _warn(path, f\"is not",
      ("tests/report/test_report_damaged.py::test_a_config_that_is_not_a_shallow_json_object_is_left_out",)),
    M("report_grid_size_unchecked", "report/images.py", "if opened.width * opened.height > MAX_GRID_PIXELS:",
      "if False:",
      ("tests/report/test_report_damaged.py::test_grids_that_cannot_be_shown_are_left_out_with_a_warning",)),
    M("report_out_checked_after_the_work", "report/__init__.py",
      "    check_destination(out)  # before the work", "    pass  # before the work",
      ("tests/report/test_report_damaged.py::test_the_page_is_never_written_over_what_is_not_a_regular_file",)),
    M("report_reduced_protocol_called_full", "report/protocols.py", "if fakes is None or fakes < spec.num_gen:",
      "if fakes is None:", (SEEN + "test_every_metric_value_names_its_images_and_a_reduced_protocol_is_marked",)),
    M("report_best_mixes_protocols", "report/tables.py",
      "comparable = [result for result in results if _rank(result[2]) == top]", "comparable = results",
      (SEEN + "test_every_metric_value_names_its_images_and_a_reduced_protocol_is_marked",)),
    M("report_image_count_unchecked", "report/rundata.py", "count.is_integer() and 0 <= count <= MAX_IMAGES",
      "True", ("tests/report/test_report_damaged.py::test_image_counts_that_no_metric_writes_are_not_recorded",)),
    M("report_profile_link_followed", "report/rundata.py", "is_folder = stat.S_ISDIR(folder.lstat().st_mode)",
      "is_folder = folder.is_dir()", (SEEN + "test_a_profile_summary_is_read_bounded_and_never_through_a_link",)),
    M("stats_cache_layout_unchecked", "metrics/features.py", "            problem = _layout_problem(path)\n",
      "            problem = None\n",
      ("tests/hostile/test_hostile_outputs.py::test_a_damaged_statistics_cache_is_computed_again",)),
    # The bench's repeats, their spread and the shape --data gives.
    M("bench_repeats_interleaved", "bench/measure.py", "times[timed // rounds.steps]", "times[timed % rounds.repeat]",
      ("tests/bench/test_bench_repeats.py::test_time_rounds_groups_the_rounds_after_warm_up_into_repeats_of_medians",)),
    M("bench_img_per_s_the_best_repeat", "bench/measure.py", "return statistics.median(self.repeat_img_per_s)",
      "return max(self.repeat_img_per_s)",
      ("tests/bench/test_bench_repeats.py::test_img_per_s_and_phase_spreads_come_from_the_repeats",)),
    M("bench_spread_never_warns", "bench/spread.py", "if img_per_s.relative <= SPREAD_LIMIT:",
      "if img_per_s.relative <= 10 * SPREAD_LIMIT:",
      ("tests/bench/test_bench_repeats.py::test_the_spread_warning_starts_above_the_limit_and_names_the_cause_and_the_fix",
       "tests/bench/test_bench_repeats.py::test_bench_prints_the_spread_warning_on_stderr_and_puts_it_in_the_json")),
    M("bench_flags_override_the_data", "bench/shape.py", "if given is not None and given != actual:", "if False:",
      ("tests/bench/test_bench_data.py::test_flags_that_contradict_the_data_are_each_an_error_naming_both",)),
    M("bench_data_channels_ignored", "bench/shape.py", "        return dataset.channels, DATA\n",
      "        return DEFAULT_CHANNELS, DATA\n",
      ("tests/bench/test_bench_data.py::test_bench_data_times_the_datasets_shape_and_says_so",)),
    # The profiler: torch's stderr notes routed, a small trace by default, a window that covers every phase.
    M("profiler_start_noise_on_stderr", "monitor/profiler.py",
      "with routed_stderr(self._messages):\n            self._profile.__enter__()",
      "with contextlib.nullcontext():\n            self._profile.__enter__()",
      (PROFILER + "test_torchs_own_stderr_notes_go_to_a_file_not_to_stderr",)),
    M("profiler_allocator_warning_in_a_step", "monitor/profiler.py", "            del before_start\n",
      "            pass\n", (PROFILER_DETAIL,)),
    M("profiler_shapes_and_memory_by_default", "monitor/profiler.py", "record_shapes=d, profile_memory=d",
      "record_shapes=True, profile_memory=True",
      (PROFILER_DETAIL,)),
    M("profiler_window_not_extended", "monitor/profiler.py", "(not self.missing() or self._count >= self.limit)",
      "(True or self._count >= self.limit)",
      (PROFILER + "test_the_window_is_extended_until_every_phase_ran", PROFILER_BOUND)),
    M("profiler_missing_phase_shown_as_zero", "monitor/profiler.py", "        if name in window.missing:",
      "        if False:", (PROFILER_BOUND,)),
    # Perceptual path length and the Inception Score: the official protocols' maths.
    M("ppl_divided_by_eps", "metrics/ppl.py", "return squared_distance(a, b) / EPSILON**2",
      "return squared_distance(a, b) / EPSILON", (PPL_REFERENCE + "[ppl_wend-24]",)),
    M("ppl_z_lerp", "metrics/ppl.py", "ends = torch.cat([slerp(z0, z1, t), slerp(z0, z1, t + EPSILON)])",
      "ends = torch.cat([z0.lerp(z1, t), z0.lerp(z1, t + EPSILON)])",
      (PPL_REFERENCE + "[ppl_zend-24]", PPL_REFERENCE + "[ppl_zfull-104]")),
    M("ppl_no_percentile_filter", "metrics/ppl.py", "return float(d[(d >= low) & (d <= high)].mean())",
      "return float(d.mean())",
      (PPL_TESTS + "test_trimmed_mean_keeps_the_lower_1st_to_the_higher_99th_percentile",
       PPL_REFERENCE + "[ppl_zfull-104]")),
    M("ppl_noise_not_redrawn", "metrics/ppl.py", "redraw_noise(buffers, opts.seed, mine[row])",
      "redraw_noise([], opts.seed, mine[row])", (PPL_REFERENCE + "[ppl_wend-24]",)),
    M("is_splits_ignored", "metrics/inception_score.py",
      "part = probs[i * n // num_splits : (i + 1) * n // num_splits].double()", "part = probs.double()",
      (IS_HAND,)),
    M("is_with_output_bias", "metrics/inception_score.py", "return self.net(x, no_output_bias=True)",
      "return self.net(x)", (IS_HAND,)),
    # Projection: the official projector's maths, W against W+, targets independent of their batch.
    M("project_noise_regulariser_negated", "project/search.py",
      "loss = distance + noise_penalty(list(maps.values())) * settings.NOISE_REGULARIZATION",
      "loss = distance - noise_penalty(list(maps.values())) * settings.NOISE_REGULARIZATION", (PROJECT_LAYOUT,)),
    M("project_wplus_one_w", "project/search.py", 'rows = G.num_ws if space == "wplus" else 1', "rows = 1",
      (PROJECT_LAYOUT,)),
    M("project_w_per_layer", "project/search.py", 'rows = G.num_ws if space == "wplus" else 1', "rows = G.num_ws",
      (PROJECT_LAYOUT,)),
    M("project_target_seeded_by_batch_place", "project/run.py", 'position_seed(options.seed, "project", index)',
      'position_seed(options.seed, "project", index % options.batch)',
      (PROJECT + "test_the_same_seed_gives_the_same_bytes_and_a_target_does_not_depend_on_its_batch",)),
    M("project_noise_not_renormalised", "project/search.py", "            _normalise(maps.values())\n", "",
      (PROJECT_LAYOUT,)),
    # Projected latents: the file's bounds, and the noise maps rendered with their rows.
    M("generate_ignores_row_noise", "generate/render.py", 'if self.noise_mode == "const" and self.row_noise:',
      "if False:", (PROJECT + "test_generate_renders_the_projected_latent_as_proj_png", PROJECTED_NOISE)),
    M("projected_noise_rows_unchecked", "projected.py", "if name != MEMBER and (shape[0] != rows or ",
      "if name != MEMBER and (", (PROJECTED_HOSTILE,)),
    M("projected_declared_size_unchecked", "projected.py",
      "    if problem is None and header + math.prod(shape) * dtype.itemsize != info.file_size:", "    if False:",
      (PROJECTED_HOSTILE,)),
    M("projected_network_shape_unchecked", "projected.py",
      "    if num_ws is not None and (found_ws, found_dim) != (num_ws, w_dim):", "    if False:",
      (PROJECTED_HOSTILE,)),
    M("projected_header_bound_numpy_default", "projected.py", "MAX_HEADER_CHARS = 1024", "MAX_HEADER_CHARS = 10000",
      (PROJECTED_HOSTILE,)),
    M("projected_header_token_error_escapes", "projected.py", "    TokenError,\n", "", (PROJECTED_HOSTILE,)),
    M("generate_projected_combination_unchecked", "generate/problems.py",
      "    flags = [flag for flag, value in makers if value is not None]", "    flags = []",
      ("tests/generate/test_generate_projected.py::test_flags_that_make_ws_from_seeds_are_refused_with_projected_rows",)),
    M("r3gan_pickle_state_set_twice", "interop/r3gan_pickle.py", "        elif target.built:", "        elif False:",
      (R3GAN_IMPORT + "test_modules_are_made_empty_and_given_their_state_once",)),
    M("r3gan_resampling_filter_unchecked", "interop/r3gan.py",
      "not torch.equal(value.to(torch.float32), fir_kernel())", "False",
      (R3GAN_IMPORT + "test_a_network_unlike_the_released_ones_is_refused",)),
    M("r3gan_conv_padding_unchecked", "interop/r3gan.py", "    want = {\"padding\": (pad, pad)}", "    want = {}",
      (R3GAN_IMPORT + "test_a_network_unlike_the_released_ones_is_refused",)),
    M("r3gan_input_width_unchecked", "interop/r3gan.py", "if inputs != z_dim + embed_dim:", "if False:",
      (R3GAN_IMPORT + "test_a_network_unlike_the_released_ones_is_refused",)),
    M("r3gan_finetune_stages_unchecked", "families/r3gan/traits.py", "    return fields if fits else None",
      "    return fields",
      (R3GAN_IMPORT + "test_fine_tuning_starts_from_a_released_file_whose_stages_a_config_describes",)),
    M("r3gan_bf16_stages_at_the_bottom", "nets/r3gan.py", "i >= len(stages) - num_fp16_res", "i < num_fp16_res",
      (R3GAN_NETS + "test_reduced_precision_stages_are_the_top_ones_in_bfloat16",)),
    M("r3gan_auto_bf16_without_stages", "train/resolver.py",
      "    if not bf16_stages or options.fp16_res is not None or options.precision is not None:",
      "    if True:", (R3GAN_AUTO_BF16,)),
    M("widths_groups_unchecked", "train/problems.py", "        if width % groups\n", "        if False\n",
      (R3GAN_WIDTHS,)),
    M("other_widths_continued", "train/rundir.py",
      "    return not any(path in SHAPE_FIELDS for path, _, _ in _maths_changes(run, cfg))",
      "    return True", (RUN_CHOICE + "test_a_run_of_other_widths_is_never_continued_nor_offered",)),
    M("pretrained_widths_unchecked", "train/pretrained.py", "    problems += _shape_problems(asked, facts, path)\n",
      "", (PRETRAINED + "test_widths_other_than_the_pickles_are_refused_and_its_own_accepted",)),
    M("r3gan_r2_on_reals", "train/relativistic.py",
      "L.zero_centred_penalties((real_logits, fake_logits), (reals, fakes), mb.gamma)",
      "L.zero_centred_penalties((real_logits, real_logits), (reals, reals), mb.gamma)", (R3GAN_PHASES,)),
    M("r3gan_pairing_reversed", "train/loss.py", "return F.softplus(fake_logits - real_logits).flatten()",
      "return F.softplus(real_logits - fake_logits).flatten()", (R3GAN_LOSSES, R3GAN_PHASES)),
    M("r3gan_g_pairs_other_reals", "train/relativistic.py", "loss = L.g_relativistic(fake_logits, real_logits)",
      "loss = L.g_relativistic(fake_logits, real_logits.roll(1, 0))", (R3GAN_PHASES,)),
    M("r3gan_schedule_does_not_anneal", "train/schedules.py",
      "    progress = min(cur_nimg / (anneal_kimg * 1000), 1.0)\n", "    progress = 0.0\n",
      (R3GAN + "test_schedules_anneal_along_a_half_cosine_and_stay_at_the_end",
       R3GAN + "test_the_released_schedules_are_annealed_from_the_presets_start_to_end_values")),
    M("r3gan_beta2_not_annealed", "train/phases.py", "        if plan.beta2 is not None:", "        if False:",
      (R3GAN + "test_tiny_r3gan_trains_through_the_cli_and_a_stopped_run_continues_bitwise",)),
    M("r3gan_residual_branch_not_zero", "nets/r3gan_layers.py",
      "self.conv3 = Convolution(expanded, channels, 1, gain=0.0)", "self.conv3 = Convolution(expanded, channels, 1)",
      (R3GAN_FIXUP,)),
    M("r3gan_fixup_depth_ignored", "nets/r3gan_layers.py",
      "gain = ACTIVATION_GAIN * network_blocks ** (-1 / (2 * LINEAR_LAYERS_PER_BLOCK - 2))",
      "gain = ACTIVATION_GAIN", (R3GAN_FIXUP,)),
    M("r3gan_groups_per_channel_count", "families/r3gan/traits.py", "max(width // model.group_channels, 1)",
      "model.group_channels", (R3GAN_COUNTS,)),
    M("swd_level_named_by_a_rounded_down_side", "metrics/swd.py", "level_name(-(-height // 2**i), -(-width // 2**i))",
      "level_name(height >> i, width >> i)", ("tests/metrics/test_metrics_swd.py",)),
    M("eq_r_over_half_the_circle", "metrics/equivariance.py", "dtype=torch.float64)) * 2 - 1) * math.pi",
      "dtype=torch.float64)) * 2 - 1) * math.pi / 2", ("tests/metrics/test_metrics_equivariance_draws.py",)),
    M("eq_psnr_of_a_peak_of_one", "metrics/equivariance.py", "return 20 * math.log10(2) - 10",
      "return 20 * math.log10(1) - 10", ("tests/metrics/test_metrics_equivariance_draws.py",)),
    M("stored_architecture_square", "config/architecture.py", 'aspect=tuple(fields["data.aspect"]),',
      "aspect=(1, 1),", ("tests/train/test_train_nonsquare.py",)),
    M("stored_architecture_unconditional", "config/architecture.py", 'label_dim=fields["data.label_dim"],',
      "label_dim=0,", ("tests/train/test_train_label_vectors.py",)),
    M("r3gan_embedding_not_projected", "nets/r3gan.py", "(x * nn.functional.linear(c.float(), self.embed))",
      "x", (R3GAN_CONDITIONING,)),
    M("attention_softmax_over_the_queries", "nets/attention.py",
      "o = nn.functional.scaled_dot_product_attention(q, k, v)",
      "o = nn.functional.scaled_dot_product_attention(k, q, v)",
      (ATTENTION + "test_the_block_equals_the_slow_reference",)),
    M("attention_gain_starts_at_one", "nets/attention.py", "self.gain = nn.Parameter(torch.zeros([]))",
      "self.gain = nn.Parameter(torch.ones([]))", (ATTENTION + "test_attention_starts_as_the_identity_in_g_and_d",)),
    M("attention_logits_unscaled", "nets/attention.py", "o = nn.functional.scaled_dot_product_attention(q, k, v)",
      "o = nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0)",
      (ATTENTION + "test_the_block_equals_the_slow_reference",)),
    M("attention_beyond_the_network_accepted", "limits.py", "resolution_ok(r) and r <= top for r in value",
      "resolution_ok(r) for r in value", (ATTENTION + "test_attention_only_at_the_networks_block_resolutions",)),
    M("attention_memory_unchecked", "train/layouts.py",
      "        memory.check(needs, facts.host_bytes, facts.device_bytes)", "        pass",
      ("tests/train/test_train_attention.py::test_a_map_that_the_penalties_cannot_hold_is_refused_naming_its_size",)),
    M("cifar_trains_the_residual_d", "families/stylegan2/traits.py", 'style_mixing=0.0, d_arch="orig"),',
      "style_mixing=0.0),",
      (LAYOUTS + "test_each_preset_has_the_official_layouts",)),
    M("pretrained_d_layout_ignored", "families/stylegan2/traits.py",
      'd_fields = {} if d is None else {"model.d_arch"', 'd_fields = {} if True else {"model.d_arch"',
      (LAYOUTS + "test_pretrained_networks_decide_their_layouts",)),
    M("older_configs_read_as_plain_g", "families/record.py", '{"model.g_arch": "skip"} if self.g_layouts',
      '{"model.g_arch": "orig"} if self.g_layouts',
      (LAYOUTS + "test_a_config_from_before_the_layouts_reads_as_the_layouts_it_was_built_with",
       LAYOUTS + "test_a_checkpoint_of_other_layouts_is_refused_naming_the_options")),
    # Progressive growing (nets/growth.py, train/growing.py).
    M("growth_g_fades_the_wrong_way", "nets/generator.py",
      'return (1.0 if self.architecture == "skip" else 1.0 - fade), fade',
      'return (1.0 if self.architecture == "skip" else fade), 1.0 - fade',
      (GROWTH + "test_g_image_is_linear_in_the_fade_and_continuous_where_a_fade_starts_and_ends",)),
    M("growth_g_keeps_every_lower_torgb", "nets/generator.py",
      'if self.architecture == "skip" or (res == top // 2 and fade < 1):', "if True:",
      (GROWTH + "test_g_image_is_linear_in_the_fade_and_continuous_where_a_fade_starts_and_ends",
       GROWTH + "test_fully_grown_networks_are_the_standard_ones_without_the_layers_growth_added")),
    M("growth_d_fades_the_wrong_way", "nets/discriminator.py", "                x = x * fade\n",
      "                x = x * (1.0 - fade)\n",
      (GROWTH + "test_d_fades_out_its_previous_entry_as_the_hand_wired_pass_does_and_is_continuous",)),
    M("growth_d_entry_never_fades_out", "nets/discriminator.py",
      'rgb_gain = 1.0 if self.architecture == "skip" else 1.0 - fade', "rgb_gain = 1.0",
      (GROWTH + "test_d_fades_out_its_previous_entry_as_the_hand_wired_pass_does_and_is_continuous",)),
    M("growth_reals_not_blended", "nets/growth.py", "return torch.lerp(coarse, img, fade)", "return img",
      (GROWTH + "test_reals_at_a_stage_are_the_fir_resampling_and_blend_with_the_coarser_stage_during_a_fade",)),
    M("growth_reals_blended_the_wrong_way", "nets/growth.py", "return torch.lerp(coarse, img, fade)",
      "return torch.lerp(img, coarse, fade)",
      (GROWTH + "test_reals_at_a_stage_are_the_fir_resampling_and_blend_with_the_coarser_stage_during_a_fade",)),
    M("growth_schedule_fades_in_the_stable_periods", "nets/growth.py", "fading = periods % 2 == 1",
      "fading = periods % 2 == 0",
      (GROWTH + "test_the_schedule_alternates_stable_and_fading_periods_up_to_the_data_resolution",)),
    M("growth_adam_not_reset", "train/growing.py", "            network.opt.state.clear()", "            pass",
      (GROWING + "test_a_run_grows_through_a_fade_and_a_stop_in_the_middle_of_it_continues_bitwise",)),
    M("growth_stage_fade_unchecked", "limits.py", "        and 0 <= stage[1] <= 1\n", "",
      (GROWTH + "test_the_stage_is_recorded_rebuilt_and_checked_like_every_argument_a_file_holds",)),
    M("growth_half_grown_weights_accepted", "interop/pretrained.py", "    if stage:\n", "    if False:\n",
      (GROWING + "test_a_grown_snapshot_fine_tunes_without_its_growth_layers_and_a_half_grown_one_is_refused",)),
    M("shards_ranks_overlap", "data/stream.py", ".permutation(num_shards)[rank::world]",
      ".permutation(num_shards)[rank:]", (SHARDS + "test_ranks_read_disjoint_shards_and_every_shard_each_pass",)),
    M("shards_same_deal_every_pass", "data/stream.py", "default_rng([seed, origin, epoch]).permutation",
      "default_rng([seed, origin]).permutation",
      (SHARDS + "test_ranks_read_disjoint_shards_and_every_shard_each_pass",)),
    M("shards_buffer_emits_a_later_sample", "data/stream.py", "        held[slot] = arrival\n",
      "        held[slot] = min(arrival + 1, count - 1)\n", (SHARDS + "test_shard_plan_is_a_bounded_shuffle",)),
    M("shards_resume_keeps_the_skipped", "data/stream.py", "    if leaving >= skip:\n", "    if True:\n",
      (SHARDS + "test_stream_resumes_exactly_anywhere",)),
    M("shards_flip_ignores_the_coin", "data/stream.py", "yield image, label, bool(flips[leaving]), where",
      "yield image, label, bool(dataset.mirror), where", (SHARDS + "test_stream_resumes_exactly_anywhere",)),
    M("shards_too_few_for_the_ranks", "data/stream.py", "    if len(counts) < world:\n", "    if False:\n",
      (SHARDS + "test_more_processes_than_shards_is_refused",)),
    M("shards_index_total_unchecked", "data/shards.py", "        and sum(counts) == total\n", "",
      (SHARDS + "test_a_hostile_index_is_refused_with_its_problem",)),
    M("tar_size_cap_unchecked", "data/tarstream.py", "        if size > cap:\n", "        if False:\n",
      (TARSTREAM_REFUSALS,)),
    M("tar_checksum_unchecked", "data/tarstream.py", "    if stored != sum(block[:148])",
      "    if False and stored != sum(block[:148])", (TARSTREAM_REFUSALS,)),
    M("tar_extension_headers_read", "data/tarstream.py", "        if kind not in _REGULAR:\n", "        if False:\n",
      (TARSTREAM_REFUSALS,)),
    M("remote_short_read_accepted", "data/remote.py", "        if received.size != end - start:\n",
      "        if not received.size:\n", (SHARDS + "test_a_shard_that_disagrees_with_its_index_is_named",)),
    M("remote_no_retry", "data/remote.py", "            if tries > len(limits.delays) or elapsed",
      "            if True or elapsed",
      (REMOTE + "test_http_gives_the_local_batches_and_survives_dropped_connections",)),
    M("stream_origin_off_its_steps_accepted", "checkpoint/resumable.py", "        if (cur_nimg - origin) % world_size:",
      "        if False:",
      (RESUMABLE_CASES,)),
    M("label_cell_nan_accepted", "data/labelling.py", "return math.isfinite(value) and abs(value) <= _FLOAT32_MAX",
      "return True", (VECTORS + "test_every_problem_of_a_vector_csv_is_listed_once",)),
    M("label_row_repeat_accepted", "data/labelling.py", "            elif file in self.first_line:\n",
      "            elif False:\n", (VECTORS + "test_every_problem_of_a_vector_csv_is_listed_once",)),
    M("fast_vector_nan_read", "data/fastformat.py", "        if not np.isfinite(vectors).all():", "        if False:",
      (VECTORS + "test_hostile_vector_files_are_refused_when_opened",)),
    M("shard_labels_file_unhashed", "data/shardset.py",
      'if len(data) != size or hashlib.sha256(data).hexdigest() != self.index["labels_sha256"]:',
      "if len(data) != size:", (VECTORS + "test_hostile_vector_files_are_refused_when_opened",)),
    M("shard_labels_file_not_compared", "data/check.py", "    if not np.array_equal(labels, ds.raw_labels):",
      "    if False:", (VECTORS + "test_hostile_vector_files_are_refused_when_opened",)),
    M("multi_hot_any_entry", "data/distribution.py", "np.isin(labels, (0, 1)).all()", "np.isin(labels, (0, 1)).any()",
      (VECTORS + "test_info_shows_ranges_and_verify_rehashes_the_vectors",)),
    M("vector_names_any_length", "data/labels.py", "    if problem is None and len(declared) != dim:",
      "    if False:", (VECTORS + "test_source_dataset_json_vectors_keep_their_declared_names",)),
    M("shard_stream_one_hot_vectors", "data/shardset.py", "        if self.vectors:\n            return label\n",
      "", (VECTORS + "test_the_shard_stream_gives_each_image_its_vector",)),
    # Non-square StyleGAN2 networks (aspect): shapes by the aspect, square networks recorded as before, stored aspects
    # within the rules.
    M("aspect_const_transposed", "nets/generator.py", "[out_channels, 4 * aspect[0], 4 * aspect[1]]",
      "[out_channels, 4 * aspect[1], 4 * aspect[0]]",
      ("tests/nets/test_nets_aspect.py::test_the_const_the_noise_and_the_d_head_have_the_aspects_shape",)),
    M("aspect_d_head_square", "nets/discriminator.py", "in_channels * math.prod(self.size), in_channels",
      "in_channels * 4 * 4, in_channels",
      ("tests/nets/test_nets_aspect.py::test_g_and_d_run_forward_and_backward_at_the_aspect",)),
    M("aspect_recorded_when_square", "nets/layers.py", "return {} if tuple(aspect) == (1, 1) else",
      "return {} if False else",
      ("tests/nets/test_nets_aspect.py::test_a_square_network_is_the_one_built_without_the_argument",)),
    M("aspect_any_pair_of_powers", "limits.py", "        and min(aspect) == 1\n", "",
      ("tests/nets/test_nets_aspect.py::test_a_hostile_stored_aspect_is_refused_before_anything_is_built",)),
    M("aspect_long_side_unbounded", "limits.py", "1 <= f <= MAX_RESOLUTION // short and", "1 <= f and",
      ("tests/nets/test_nets_aspect.py::test_a_hostile_stored_aspect_is_refused_before_anything_is_built",
       "tests/nets/test_nets_aspect.py::test_the_constructors_refuse_a_bad_aspect_with_the_rule_and_stylegan3_takes_none")),
    M("resized_by_the_width", "nets/growth.py", "    while min(img.shape[-2:]) > resolution:",
      "    while img.shape[-1] > resolution:",
      ("tests/nets/test_nets_aspect.py::test_a_growing_network_runs_at_each_stage_in_the_aspect",)),
    M("cpu_kernels_by_square_pixels", "nets/generator.py", "worth_it(module.weight, math.prod(module.size))",
      "worth_it(module.weight, module.resolution**2)",
      ("tests/nets/test_nets_aspect.py::test_cpu_kernels_are_chosen_by_the_real_number_of_pixels",)),
    M("aspect_left_to_the_constructor", "limits.py", 'problem = aspect_problem(value, arch.get("resolution"))',
      "problem = None",
      ("tests/nets/test_nets_aspect.py::test_a_bad_aspect_is_listed_with_the_other_problems_of_a_stored_architecture",)),
    M("aspect_quarter_turns_on_non_square", "augment/ops.py", "            turns = turns // 2 * 2\n",
      "            turns = turns\n",
      ("tests/train/test_augment.py::test_rotate90_turns_non_square_images_by_half_turns_only",)),
    M("non_square_families_unchecked", "train/problems.py", "    if (rows, cols) != (1, 1):\n        problems +=",
      "    if False:\n        problems +=",
      ("tests/train/test_train_nonsquare.py::test_square_only_families_refuse_non_square_data",)),
    M("center_crop_square_box", "data/images.py",
      "box_width, box_height = round(width * scale), round(height * scale)",
      "box_width = box_height = round(min(width, height) * scale)",
      ("tests/data/test_data_images.py::test_center_crop_to_a_non_square_size_keeps_the_centred_box_of_its_aspect",)),
    M("fast_size_short_side_unchecked", "data/fastformat.py", ' or min(width, height) != header["resolution"]', "",
      ("tests/data/test_data_nonsquare.py::test_a_hostile_size_in_a_header_or_index_is_refused",)),
    M("square_hash_changed", "data/fastformat.py", "shape = height if height == width else [height, width]",
      "shape = [height, width]",
      ("tests/data/test_data_nonsquare.py::test_a_square_dataset_hashes_and_stores_as_before",)),
    M("data_aspect_ignored", "train/resolver.py", '"data.aspect": tuple(dataset.aspect),', '"data.aspect": (1, 1),',
      ("tests/train/test_train_nonsquare.py::test_stylegan2_trains_and_samples_non_square_images",)),
    M("metrics_aspect_unchecked", "metrics/evaluator.py",
      "elif not same_size and real[1] * fake[2] != real[2] * fake[1]:", "elif False:",
      ("tests/metrics/test_metrics_nonsquare.py::"
       "test_a_generator_against_data_of_another_aspect_is_refused_naming_both_shapes",)),
    M("swd_patches_by_the_short_span", "metrics/swd.py", "(DESCRIPTORS_PER_IMAGE, 2), generator=generator) % spans",
      "(DESCRIPTORS_PER_IMAGE, 2), generator=generator) % spans.min()",
      ("tests/metrics/test_metrics_nonsquare.py::test_patch_corners_cover_each_dimension_and_keep_the_square_draws",)),
    M("projected_noise_maps_square_only", "projected.py",
      "    return height == width or all(side >= 1 and side & (side - 1) == 0 for side in (height, width))",
      "    return height == width",
      ("tests/generate/test_generate_nonsquare.py::test_projected_latents_with_non_square_noise_maps_render",)),
    M("label_file_header_any_word", "generate/labels.py", "    return all(not _is_number(cell) for cell in cells)",
      "    return any(not _is_number(cell) for cell in cells)",
      ("tests/generate/test_generate_label_vectors.py::test_bad_label_files_list_every_bad_line",)),
    M("tracker_failure_drops_the_event", "track/background.py", "                if self._closing.wait(delay):\n"
      "                    return False\n                continue\n",
      "                return True\n",
      ("tests/track/test_track_background.py::"
       "test_events_arrive_in_order_and_failures_are_retried_with_one_warning",)),
    M("tracker_ids_not_kept", "track/session.py", "        self._run.remember(self.name, run_id)\n", "",
      ("tests/track/test_track_background.py::test_a_run_keeps_its_tracker_ids_and_a_resume_continues_them",)),
    # ganforge explore: what keeps a served model safe from its requests.
    M("explore_token_not_checked", "explore/guards.py",
      'if self.token is None or scope["type"] != "http":', "if True:",
      (EXPLORE_API + "test_a_server_on_another_address_wants_its_token_and_a_name_it_serves",)),
    M("explore_any_host_is_loopback", "explore/hosts.py", "return address is not None and address.is_loopback",
      "return True", (EXPLORE_API + "test_a_server_on_another_address_wants_its_token_and_a_name_it_serves",)),
    M("explore_unknown_parameter_accepted", "explore/queries.py", "        if name not in known:\n",
      "        if False:\n", (EXPLORE_API + "test_bad_parameters_get_400_with_a_message_naming_them[a file path]",)),
    M("explore_layer_name_not_checked", "explore/app.py", "if query.layer not in network.layers():", "if False:",
      (EXPLORE_API + "test_bad_parameters_get_400_with_a_message_naming_them[a path as a layer]",)),
    M("explore_channel_limit_dropped", "explore/queries.py", "if not 1 <= channels <= MAX_FEATURE_CHANNELS:",
      "if not 1 <= channels:",
      (EXPLORE_API + "test_bad_parameters_get_400_with_a_message_naming_them[too many channels]",)),
    M("explore_frame_limit_dropped", "explore/queries.py", "if o.image_count > MAX_INTERP_FRAMES:", "if False:",
      (EXPLORE_API + "test_bad_parameters_get_400_with_a_message_naming_them[too many frames]",)),
    M("explore_generate_limits_skipped", "explore/queries.py", 'trunc=_number(values, "trunc"),', "trunc=None,",
      (EXPLORE_API + "test_bad_parameters_get_400_with_a_message_naming_them[trunc far]",)),
    M("triton_bias_act_grad_without_gain", "nets/triton_ops.py", "mask=valid).to(ACC) * factor * gain",
      "mask=valid).to(ACC) * factor", (KERNELS + "test_bias_act_gradients_of_every_order",)),
    M("triton_bias_act_grad_ignores_clamp", "nets/triton_ops.py",
      "factor = tl.where(tl.abs(y) <= clamp, factor, 0.0)", "factor = factor",
      (KERNELS + "test_bias_act_gradients_of_every_order",)),
    M("triton_lrelu_slope_at_zero", "nets/triton_ops.py", "tl.where(z > 0, 1.0, slope)",
      "tl.where(z >= 0, 1.0, slope)", (KERNELS + "test_bias_act_gradients_of_every_order",)),
    M("triton_upfirdn2d_padding_off_by_one", "nets/triton_upfirdn2d.py", "oy * down_y - pad_y, ox * down_x - pad_x",
      "oy * down_y - pad_y + 1, ox * down_x - pad_x", (KERNELS + "test_upfirdn2d_equals_the_loops",)),
    M("triton_upfirdn2d_filter_not_flipped", "nets/triton_upfirdn2d.py", "tl.load(taps_row - kx,",
      "tl.load(taps_row + 1 - taps_w + kx,", (KERNELS + "test_upfirdn2d_equals_the_loops",)),
    M("triton_adjoint_padding_off_by_one", "nets/triton_upfirdn2d.py", "lo_y, lo_x = taps_h - 1 - py0,",
      "lo_y, lo_x = taps_h - py0,", (KERNELS + "test_upfirdn2d_gradients_of_every_order",)),
    M("triton_flrelu_grad_ignores_slope", "nets/triton_upfirdn2d.py",
      "tl.where((bits & 1) != 0, acc, acc * slope)", "acc", (KERNELS + "test_filtered_lrelu_equals_the_reference",)),
    M("triton_flrelu_grad_ignores_clamp", "nets/triton_upfirdn2d.py", "acc = tl.where((bits & 2) != 0,",
      "acc = tl.where((bits & 2) >= 0,", (KERNELS + "test_filtered_lrelu_equals_the_reference",)),
    M("triton_flrelu_padding_off_by_one", "nets/triton_filtered_lrelu.py", "(0, 0, py0, py1)",
      "(0, 0, py0 + 1, py1 - 1)", (KERNELS + "test_filtered_lrelu_equals_the_reference",)),
    M("triton_flrelu_gain_dropped", "nets/triton_filtered_lrelu.py", "gain * up * up, x)", "up * up, x)",
      (KERNELS + "test_filtered_lrelu_equals_the_reference",)),
    M("triton_flrelu_double_backward_not_transposed", "nets/triton_filtered_lrelu.py",
      "slope, size, not transpose)", "slope, size, transpose)",
      (KERNELS + "test_filtered_lrelu_gradients_of_every_order",)),
    M("sg3_layers_ignore_kernels", "nets/stylegan3_layers.py", "return self.ops.filtered_lrelu(",
      "return REFERENCE_OPS.filtered_lrelu(",
      (KERNELS + "test_a_stylegan3_generator_step_with_the_kernels_equals_the_reference",)),
    M("kernels_choice_not_applied", "nets/kernels.py", "                module.ops = ops",
      "                module.ops = module.ops",
      (KERNELS + "test_a_whole_step_with_the_kernels_equals_the_reference",)),
    M("compile_mode_not_passed", "train/precision.py", "torch.compile(forward, mode=self.compile)",
      'torch.compile(forward, mode="default")', (COMPILE_MODE_TEST,)),
    M("compile_flag_alone_not_default", "config/sections.py", 'bare="default",', 'bare="max-autotune",',
      (COMPILE_OPTIONS + "test_the_flag_alone_is_the_default_mode_and_a_mode_may_follow_it",)),
    M("compile_switch_read_inverted", "config/__init__.py", 'COMPILE_SWITCH = {True: "default", False: "off"}',
      'COMPILE_SWITCH = {True: "off", False: "default"}',
      (COMPILE_OPTIONS + "test_config_json_and_checkpoints_of_the_switch_read_as_its_modes",)),
    M("compile_switch_not_read", "config/__init__.py",
      'return {"runtime.compile": COMPILE_SWITCH[compile_]} if isinstance(compile_, bool) else {}', "return {}",
      (COMPILE_OPTIONS + "test_config_json_and_checkpoints_of_the_switch_read_as_its_modes",
       "tests/train/test_train_dry_run_recorded.py::test_dry_run_config_equals_the_recorded_one")),
    M("compiling_means_the_default_mode_only", "config/sections.py", "return self.compile != COMPILE_OFF",
      'return self.compile == "default"',
      (COMPILE_OPTIONS + "test_the_flag_alone_is_the_default_mode_and_a_mode_may_follow_it",
       COMPILE_OPTIONS + "test_what_compiling_refuses_is_refused_in_every_mode")),
    M("reduce_overhead_accepted_on_cpu", "train/problems.py",
      'if r.compile == "reduce-overhead" and device_type != "cuda":',
      'if r.compile == "reduce-overhead" and device_type == "mps":',
      (COMPILE_OPTIONS + "test_reduce_overhead_on_a_cpu_is_refused_in_train_and_bench_with_the_fix",
       COMPILE_OPTIONS + "test_every_mode_resolves_on_cuda_and_only_reduce_overhead_is_refused_on_a_cpu")),
    M("fp16_res_refused_in_the_default_mode_only", "train/problems.py",
      'if r.compiling and p.mode == "fp16" and p.fp16_res:',
      'if r.compile == "default" and p.mode == "fp16" and p.fp16_res:',
      (COMPILE_OPTIONS + "test_what_compiling_refuses_is_refused_in_every_mode",)),
    M("cuda_graph_modes_without_max_autotune", "train/precision.py",
      'CUDA_GRAPH_MODES = ("max-autotune", "reduce-overhead")', 'CUDA_GRAPH_MODES = ("reduce-overhead",)',
      (COMPILE_MODE_TEST,)),
    M("cuda_graph_outputs_not_copied", "train/precision.py",
      "return functools.partial(_copied_output, fast) if self.cuda_graphs else fast", "return fast",
      (COMPILE_MODE_TEST,
       COMPILED_PHASES + "test_cuda_graph_steps_with_accumulation_and_lazy_regularisation_equal_eager_steps")),
    M("cuda_graph_gradients_left_none", "train/precision.py",
      "p.grad = torch.zeros_like(p) if self.cuda_graphs else None", "p.grad = None",
      (PRECISION_TESTS + "test_under_cuda_graphs_a_phase_accumulates_into_zeroed_gradients_of_its_own",)),
    M("cuda_graph_rounds_not_marked", "train/precision.py", "            torch.compiler.cudagraph_mark_step_begin()",
      "            pass", (COMPILE_MODE_TEST,
       COMPILED_PHASES + "test_cuda_graph_steps_with_accumulation_and_lazy_regularisation_equal_eager_steps")),
    M("r3gan_d_phase_through_the_compiled_d", "train/relativistic.py",
      "trainer.discriminate_pair(fakes, reals, mb, main=False)", "trainer.discriminate_pair(fakes, reals, mb)",
      (COMPILED_PHASES + "test_compiled_main_forwards_train_every_phase_as_eager_does",)),
    M("fid_pivot_not_largest", "metrics/fid.py", "pivot = int(residual.argmax())", "pivot = rank",
      ("tests/metrics/test_metrics_fid.py::test_the_pivoted_root_of_a_few_samples_covariance_has_their_rank_and_reproduces_it",)),
    M("fid_pivoted_past_rounding", "metrics/fid.py", "residual[pivot] <= tolerance", "residual[pivot] <= 0",
      ("tests/metrics/test_metrics_fid.py::test_the_pivoted_root_of_a_few_samples_covariance_has_their_rank_and_reproduces_it",)),
    M("fid_singular_by_eigh", "metrics/fid.py", "        root = _pivoted_root(sigma1)\n", "        root = None\n",
      ("tests/metrics/test_metrics_fid.py::test_a_few_samples_distance_equals_the_one_from_their_features_exactly_and_eighs_closely",)),
    # secrets of URLs at the boundary, and the one-line refusals of names not UTF-8 and huge numeric class labels
    M("config_recorded_with_secrets", "config/__init__.py", "return public_value(dataclasses.asdict(self))",
      "return dataclasses.asdict(self)",
      ("tests/train/test_train_rundir.py::test_a_url_is_recorded_public_and_the_url_signed_afresh_continues_the_run",)),
    M("resigned_url_another_command", "train/rundir.py", '== public_url(key.data_path) and old["preset"]',
      '== key.data_path and old["preset"]',
      ("tests/train/test_train_rundir.py::test_a_url_is_recorded_public_and_the_url_signed_afresh_continues_the_run",)),
    M("run_named_after_the_whole_url", "data/shardset.py", "self.name = path_name(location) or",
      'self.name = location.rstrip("/").rsplit("/", 1)[-1] or',
      ("tests/data/test_data_shards.py::test_a_url_with_credentials_is_read_with_them_and_shown_without",)),
    M("user_error_quotes_secrets", "errors.py", "self.problems = [public_text(problem) for problem in problems]",
      "self.problems = list(problems)",
      ("tests/data/test_data_shards.py::test_a_url_with_credentials_is_read_with_them_and_shown_without",
       "tests/test_urls.py::test_a_user_error_never_quotes_a_secret")),
    M("log_line_quotes_secrets", "train/text_sink.py", "        text = public_text(text)\n", "",
      ("tests/train/test_train_rundir.py::test_log_lines_and_a_failure_quote_urls_without_their_secrets",)),
    M("names_not_utf8_accepted", "data/archive.py", "        _refuse_undecodable(path, names)\n", "",
      ("tests/hostile/test_hostile_data.py::test_hostile_datasets_are_refused_in_one_line",)),
    M("huge_class_number_converted", "data/labelling.py", 'if len(too_long.lstrip("-")) > _MAX_CLASS_DIGITS:',
      'if len(too_long.lstrip("-")) > 10**6:',
      ("tests/hostile/test_hostile_data.py::test_hostile_datasets_are_refused_in_one_line",)),
    # explore as a web service (Host header, token, slow clients, bursts) and bounded messages of generate's values
    M("explore_host_not_checked", "explore/guards.py", "if not self.served.admits(host):", "if False:",
      (EXPLORE_API + "test_a_request_naming_another_host_is_refused",)),
    M("explore_any_name_admitted", "explore/hosts.py", "return name in self.names", "return True",
      (EXPLORE_CLI + "test_a_host_header_must_name_the_server",)),
    M("explore_any_address_admitted", "explore/hosts.py",
      "return self.any_address or address in self.addresses or (self.any_loopback and address.is_loopback)",
      "return True", (EXPLORE_CLI + "test_a_host_header_must_name_the_server",)),
    M("explore_token_cookie_not_compared", "explore/guards.py",
      "return any(self._is_token(given) for given in (cookie, bearer) if given)", "return bool(cookie or bearer)",
      (EXPLORE_API + "test_a_server_on_another_address_wants_its_token_and_a_name_it_serves",)),
    M("explore_connection_cap_not_kept", "explore/connections.py", "if len(self.open) >= self.limits.cap:",
      "if False:", (EXPLORE_CONNECTIONS + "test_slow_clients_are_shed_and_a_normal_request_is_answered",)),
    M("explore_no_read_deadline", "explore/connections.py",
      "protocol.loop.call_later(self.limits.read_deadline_s, self._expire, protocol)",
      "protocol.loop.call_later(1e9, self._expire, protocol)",
      (EXPLORE_CONNECTIONS + "test_a_connection_sending_part_of_its_next_request_is_closed_at_the_deadline",)),
    M("explore_request_in_progress_closable", "explore/connections.py", "            self.book.busy(self)\n",
      "            pass\n",
      (EXPLORE_CONNECTIONS + "test_when_every_connection_has_a_request_in_progress_a_new_one_gets_503",)),
    M("explore_a_line_per_refusal", "explore/rejections.py", "        self.counts[reason] += 1\n",
      "        self.counts[reason] += 1\n        self.write(reason)\n",
      (EXPLORE_CONNECTIONS + "test_slow_clients_are_shed_and_a_normal_request_is_answered",)),
    M("explore_accept_failures_logged", "explore/connections.py", 'if context.get("message") == ACCEPT_FAILED:',
      "if False:", (EXPLORE_CONNECTIONS + "test_accept_failing_for_want_of_descriptors_is_counted_not_logged",)),
    M("explore_open_files_not_raised", "explore/connections.py",
      "        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))\n", "",
      (EXPLORE_CONNECTIONS + "test_the_cap_stays_below_the_limit_on_open_files",)),
    M("offending_values_all_named", "errors.py", "for value in values[:limit])", "for value in values)",
      ("tests/generate/test_generate_options.py::test_network_checks_list_every_problem",
       EXPLORE_API + "test_bad_parameters_get_400_with_a_message_naming_them[a million mix layers]")),
    M("range_problems_all_kept", "generate/typed.py",
      "if problem in self.shown or len(self.shown) < self.limit:", "if True:",
      ("tests/generate/test_generate_limits.py::test_a_value_of_many_bad_parts_keeps_only_the_problems_it_shows",)),
    # Tests that tell the terms apart: each term on distinct samples, each schedule where the step consumes it.
    M("r3gan_r2_is_a_second_r1", "train/relativistic.py",
      "L.zero_centred_penalties((real_logits, fake_logits), (reals, fakes), mb.gamma)",
      "L.zero_centred_penalties((real_logits,), (reals,), mb.gamma) * 2", (R3GAN_PHASES,)),
    M("project_w_noise_full_strength", "project/search.py", "w_noise * (w_std * settings.W_NOISE * noise_factor)",
      "w_noise * (w_std * settings.W_NOISE)", (PROJECT_TERMS + "test_each_step_takes_the_scheduled_rate_and_w_noise",)),
    M("project_lr_unscheduled", "project/search.py", 'group["lr"] = settings.LEARNING_RATE * rate',
      'group["lr"] = settings.LEARNING_RATE', (PROJECT_TERMS + "test_each_step_takes_the_scheduled_rate_and_w_noise",)),
    M("project_distance_to_the_next_target", "project/search.py",
      "squared_distance(features(to_features_range(images)), target_features)",
      "squared_distance(features(to_features_range(images)), target_features.roll(1, 0))",
      (PROJECT_TERMS + "test_each_targets_distance_is_to_its_own_image",)),
    M("pti_locality_against_the_tuned_network", "project/tune.py",
      "reference = original.synthesis(w_r,", "reference = tuned.synthesis(w_r,",
      (PROJECT_TERMS + "test_the_locality_term_compares_the_tuned_network_with_the_original_at_alpha_from_the_pivot",)),
    M("gamma_not_annealed_in_the_step", "train/schedules.py", "gamma=gamma_at(cfg.loss, s, cur_nimg),",
      "gamma=cfg.loss.gamma,", (CONSUMED_R3GAN,)),
    M("planned_gamma_unused", "train/phases.py", "gamma=plan.gamma,", "gamma=cfg.loss.gamma,", (CONSUMED_R3GAN,)),
    M("ema_half_life_not_annealed_in_the_step", "train/schedules.py",
      "ema_beta(s.batch, cur_nimg, ema_kimg_at(s, cur_nimg),", "ema_beta(s.batch, cur_nimg, s.ema_kimg,",
      (CONSUMED_R3GAN,)),
    M("planned_ema_beta_unused", "train/loop.py", "update_ema(G_ema, trainer.G, plan.ema_beta)",
      "update_ema(G_ema, trainer.G, 0.999)", (CONSUMED_R3GAN,)),
    M("augment_p_not_annealed_in_the_step", "train/loop.py", "_set_augment_p(trainer, plan.augment_p)",
      "_set_augment_p(trainer, None)", (CONSUMED_R3GAN,)),
    M("blur_sigma_frozen_at_the_start", "train/schedules.py", "blur_sigma=blur_sigma(cur_nimg, cfg.loss.blur_sigma",
      "blur_sigma=blur_sigma(0, cfg.loss.blur_sigma", (CONSUMED_SG3,)),
    M("planned_blur_unused", "train/phases.py", "blur_sigma=plan.blur_sigma,", "blur_sigma=cfg.loss.blur_sigma,",
      (CONSUMED_SG3,)),
    M("growth_stage_one_step_late", "train/loop.py", "growing.reals_at(images, growing.grow(trainer, G_ema, cur_nimg))",
      "growing.reals_at(images, growing.grow(trainer, G_ema, max(cur_nimg - s.batch, 0)))", (CONSUMED_SG3,)),
    M("qat_distils_another_inputs_image", "export/qat.py", "want = teacher(*inputs)",
      "want = teacher(*inputs).roll(1, 0)",
      (QAT + "test_the_fine_tuning_loss_is_each_images_squared_difference_from_the_teachers_image_of_its_input",)),
    M("lazy_betas_uncorrected", "train/phases.py", "lr * ratio, (o.beta1**ratio, o.beta2**ratio), o.eps",
      "lr * ratio, (o.beta1, o.beta2), o.eps",
      (CONSUMED + "test_stylegan2_steps_take_the_warmed_up_stepped_lr_lazy_betas_gamma_and_ramped_ema",)),
    # A step without host syncs (the skip decided on the device, the count in a row read at the tick) and the memory
    # model that refuses a step before it is spent.
    M("skip_flag_not_handed_to_adam", "train/precision.py", "opt.found_inf, opt.grad_scale = skip, None",
      "opt.found_inf, opt.grad_scale = None, None",
      (NUMERICS + "test_train_nonfinite_step_is_skipped_with_weights_bitwise_unchanged",)),
    M("nonfinite_flag_sees_nan_only", "train/precision.py", "bad += (~torch.isfinite(t)).sum()",
      "bad += t.isnan().sum()",
      (NUMERICS + "test_train_twenty_nonfinite_steps_in_a_row_abort_at_the_tick_with_advice",)),
    M("count_in_a_row_never_reset", "train/phases.py",
      "trainer.nonfinite_in_a_row = (trainer.nonfinite_in_a_row + 1) * skipped.long()",
      "trainer.nonfinite_in_a_row = trainer.nonfinite_in_a_row + skipped.long()",
      (NUMERICS + "test_train_a_finite_step_resets_the_count_in_a_row",)),
    M("divergence_one_step_late", "train/phases.py", "if in_a_row < MAX_NONFINITE_IN_A_ROW:",
      "if in_a_row <= MAX_NONFINITE_IN_A_ROW:",
      (NUMERICS + "test_train_twenty_nonfinite_steps_in_a_row_abort_at_the_tick_with_advice",)),
    M("pl_mean_moves_on_a_skipped_step", "train/phases.py",
      "trainer.pl_mean = torch.where(skipped > 0, trainer.pl_mean, updated)", "trainer.pl_mean = updated",
      (NUMERICS + "test_train_a_skipped_path_length_step_keeps_the_mean",)),
    M("skipped_stat_read_on_the_host", "train/phases.py", "out[per_phase(SKIPPED, phase.name)] = skipped.reshape(1)",
      "out[per_phase(SKIPPED, phase.name)] = torch.tensor([float(skipped)], device=grad_norm.device)",
      (NO_SYNC + "test_train_step_never_waits_for_the_device[r3gan]",)),
    M("unmoved_images_resampled", "augment/pipe.py",
      "return torch.where(moved[:, None, None, None], warped, images)", "return warped",
      ("tests/train/test_augment.py::test_p0_is_bitwise_identity",
       "tests/train/test_augment.py::test_unmoved_images_keep_their_values_and_moved_ones_match_alone")),
    M("step_memory_without_headroom", "train/step_memory.py", "return peak * (1 + HEADROOM) <= available",
      "return peak <= available",
      (STEP_MEMORY + "test_the_largest_micro_batch_that_fits_is_found_and_confirmed",)),
    M("step_memory_never_refuses", "train/command.py",
      "        check_step_memory(config, options.gpu_memory, facts.device_type)\n", "",
      (STEP_MEMORY + "test_train_refuses_a_step_no_micro_batch_fits_with_the_figure_and_exit_2",)),
    M("live_bytes_never_freed", "train/step_memory.py", "        self.live -= nbytes", "        pass",
      (STEP_MEMORY + "test_live_bytes_count_each_storage_once_until_it_is_freed",)),
    M("fused_adam_takes_any_moment_shape", "train/checkpointing.py",
      'if any(state[key].shape != param.shape for key in ("exp_avg", "exp_avg_sq") if key in state):',
      "if False:", (NUMERICS + "test_train_fused_adam_never_takes_moments_of_another_shape",)),
    # Every command's options declared once: the checks and the command lines derived from the declarations
    M("generate_declared_checks_skipped_by_parse", "generate/options.py",
      "found += options.value_problems() + parsed", "found += parsed",
      (GENERATE_LIMITS + "test_every_number_is_checked_where_it_is_parsed",)),
    M("generate_python_options_unchecked", "generate/run.py", "    _refuse(options.value_problems())  #",
      "    options.value_problems()  #", (GENERATE_LIMITS + PYTHON_CALLERS,)),
    M("option_int_takes_a_float", "option.py", "if self.kind is int and isinstance(value, float):", "if False:",
      (GENERATE_LIMITS + PYTHON_CALLERS,)),
    M("command_writes_every_default", "option.py",
      "if d.default is dataclasses.MISSING or value != d.default:", "if True:",
      (EXPLORE_COMMAND + "test_the_command_names_only_what_differs_from_generates_defaults",)),
    M("command_float_rounded", "option.py", "return repr(value) if isinstance(value, float)",
      'return f"{value:g}" if isinstance(value, float)',
      (EXPLORE_COMMAND + "test_the_command_line_reads_the_command_back_into_the_same_options",)),
    M("export_declared_checks_skipped_by_parse", "export/options.py", "        problems += self.value_problems()\n", "",
      ("tests/export/test_export_inputs.py::test_numbers_out_of_range_are_refused_where_they_are_parsed",)),
    M("export_python_options_unchecked", "export/run.py", "    problems = options.value_problems()  #",
      "    problems = []  #", ("tests/export/test_export_inputs.py::" + PYTHON_CALLERS,)),
    M("project_declared_checks_skipped", "project/options.py",
      "return problems + value_problems(PROJECT_OPTIONS, self)", "return problems",
      ("tests/project/test_project_cli.py::test_bad_inputs_are_one_line_and_nothing_is_written",)),
    M("metrics_declared_checks_skipped", "metrics/command.py", "    problems = options.value_problems()\n",
      "    problems = []\n", (DECLARED_HOSTILE,)),
    M("build_declared_checks_skipped", "data/build.py",
      "problems = options.value_problems() + [message", "problems = [message",
      ("tests/data/test_data_build.py::" + PYTHON_CALLERS,)),
    M("verify_workers_unchecked", "data/check.py", "problems = value_problems(VERIFY_OPTIONS,",
      "problems = [] or value_problems([],", (DECLARED_HOSTILE,)),
    M("explore_declared_checks_skipped", "explore/__init__.py", "    options.check()\n", "",
      (EXPLORE_CLI + "test_python_callers_meet_the_checks_of_the_command_line",)),
    M("range_whole_takes_a_fraction", "option.py", "fraction = self.whole and isinstance(value, float)",
      "fraction = False", ("tests/export/test_export_inputs.py::" + PYTHON_CALLERS,)),
    # ---- remote reads bounded in bytes and time (data/fetch.py, data/remote.py, the hostile server of the tests)
    M("remote_read_past_range", "data/fetch.py", "into.add(piece[:room])", "into.add(piece)",
      (REMOTE_BOUNDS,)),
    M("remote_range_end_unchecked", "data/fetch.py", "    if declared is None and (excess or await next_piece()):",
      "    if False:", (REMOTE_BOUNDS, REMOTE_HOSTILE)),
    M("remote_ranges_ignored_accepted", "data/fetch.py", "    if status == 200 and (first > 0 or",
      "    if False and (first > 0 or", (REMOTE_RANGES, REMOTE_HOSTILE)),
    M("remote_no_deadline", "data/fetch.py", "into, first, total, limits), limits.request_s)",
      "into, first, total, limits), None)", (REMOTE_HOSTILE,)),
    M("remote_patience_unbounded", "data/remote.py",
      " or elapsed + limits.delays[tries - 1] > limits.patience_s:", ":", (REMOTE_HOSTILE,)),
    M("remote_index_cap_unchecked", "data/remote.py", "    if received.size > cap:\n", "    if False:\n",
      (REMOTE_BOUNDS,)),
    M("remote_index_cap_unbounded", "data/shardset.py", "remote.join(self.root, shards.INDEX), shards.index_cap()",
      "remote.join(self.root, shards.INDEX), 2**62", (REMOTE_BOUNDS,)),
    # ---- explore's views beyond a seed: latent files, w edits (generate/edits.py), ranges, zoom, spectrum, timing
    M("spectrum_not_centred", "explore/spectrum.py", "np.fft.fftshift(np.fft.fft2(grey))", "np.fft.fft2(grey)",
      (VIEWS + "test_the_log_spectrum_of_known_images", VIEWS + SPECTRUM)),
    M("spectrum_linear", "explore/spectrum.py", "np.log1p(np.abs(", "(np.abs(",
      (VIEWS + "test_the_log_spectrum_of_known_images",)),
    M("spectrum_one_channel", "explore/spectrum.py", "pixels.astype(np.float64).mean(axis=2)",
      "pixels.astype(np.float64)[:, :, 0]", (VIEWS + "test_the_log_spectrum_of_known_images",)),
    M("zoom_not_enlarged", "explore/features.py", "scale = max(1, -(-ZOOM_PX // max(image.shape)))", "scale = 1",
      (VIEWS + ZOOM,)),
    M("zoom_first_channel", "explore/features.py", "_grey(maps[channel : channel + 1])", "_grey(maps[0:1])",
      (VIEWS + ZOOM,)),
    M("zoom_channel_unchecked", "explore/features.py", "    if channel >= len(maps):", "    if False:",
      (VIEWS + "test_bad_view_parameters_get_400_with_a_message_naming_them",)),
    M("edit_direction_not_unit", "generate/edits.py", "(draw / np.linalg.norm(draw))", "draw",
      (EDITS + "test_a_random_unit_direction_is_drawn_from_its_seed",)),
    M("edit_every_w_moved", "generate/edits.py",
      "offset[layers] = (o.edit_amount * direction.expand(G.num_ws, -1))[layers]",
      "offset[:] = o.edit_amount * direction.expand(G.num_ws, -1)",
      (EDITS + "test_a_seed_direction_moves_only_the_chosen_ws_by_the_amount",)),
    M("edit_not_applied", "generate/modes.py", "return ws if self.offset is None else ws + self.offset", "return ws",
      (EDITS + "test_a_dimension_moves_every_w_along_that_axis", VIEWS + EXACT)),
    M("edit_dimension_unchecked", "generate/problems.py", "if o.edit_dim is not None and o.edit_dim >= G.w_dim:",
      "if False:", (EDITS + "test_edit_flags_that_do_not_go_together_are_refused_in_one_line",)),
    M("edit_without_amount_accepted", "generate/problems.py", "    if not amount:\n", "    if False:\n",
      (EDITS + "test_edit_flags_that_do_not_go_together_are_refused_in_one_line",)),
    M("latent_any_path_opened", "explore/latents.py", "path = self.listed().get(name)", "path = Path(name)",
      (VIEWS + "test_bad_view_parameters_get_400_with_a_message_naming_them",)),
    M("latent_cached_after_rewrite", "explore/queries.py", "stamps=tuple(latents.stamp(path) for path in files)",
      "stamps=()", (VIEWS + "test_a_latent_file_rewritten_is_not_answered_from_the_cache",)),
    M("latent_rows_batched", "explore/queries.py", '"batch": 1}', '"batch": 16}', (VIEWS + EXACT,)),
    M("render_time_not_sent", "explore/app.py", 'headers | {"Server-Timing": f"render;dur={milliseconds:.1f}"}',
      "headers", (VIEWS + "test_the_render_time_is_sent_and_a_cached_answer_says_so",)),
    M("mix_range_ignored_by_the_page", "explore/static/explore.js",
      'return `${$("mix-from").value}-${$("mix-to").value}`;', 'return "0-3";', (BROWSER_VIEWS,)),
    # ---- ganforge sweep: the space's maths and checks, pruning, continuing a stopped trial, threads, secrets
    *(M(name, path, old, new, (f"tests/sweep/test_sweep_{test}",)) for name, path, old, new, test in (
        ("sweep_log_range_linear", "sweep/space.py", "*map(float, dim.values), log=dim.how == LOG)",
         "*map(float, dim.values), log=False)",
         "space.py::test_a_whole_number_range_is_asked_as_integers_and_a_log_range_on_a_log_scale"),
        ("sweep_log_reaches_zero", "sweep/space.py", "    if log and low <= 0:", "    if False:",
         "space.py::test_a_bad_entry_is_one_line_naming_it"),
        ("sweep_bounds_unordered", "sweep/space.py", "    if not low < high:", "    if False:",
         "space.py::test_a_bad_entry_is_one_line_naming_it"),
        ("sweep_default_not_replaced", "sweep/space.py", "for entry in (*family_default, *entries):",
         "for entry in (*entries, *family_default):",
         "space.py::test_every_familys_default_space_is_valid_and_an_entry_replaces_its_default"),
        ("sweep_threads_not_split", "sweep/study.py", "str(max(1, threads // options.parallel))", "str(threads)",
         "parts.py::test_parallel_trials_on_a_cpu_split_its_threads"),
        ("sweep_storage_password_recorded", "sweep/study.py", '"storage": public_url(url),', '"storage": url,',
         "parts.py::test_the_study_record_has_the_storage_without_its_password"),
        ("sweep_start_reported", "sweep/trial.py", "if nimg > 0 and nimg not in self.reported:",
         "if nimg not in self.reported:", "run.py::test_a_sweep_prunes_and_resumes_a_killed_trial"),
        ("sweep_never_prunes", "sweep/trial.py", "                if self.trial.should_prune():",
         "                if False:", "run.py::test_a_sweep_prunes_and_resumes_a_killed_trial"),
        ("sweep_retry_new_folder", "sweep/study.py", "user_attrs={FOLDER: folder, RESUMES: trial.number}",
         "user_attrs={RESUMES: trial.number}", "run.py::test_a_sweep_prunes_and_resumes_a_killed_trial"),
        ("sweep_dead_owner_kept", "sweep/storage.py", "ProcessLookupError:\n        return True",
         "ProcessLookupError:\n        return False", "run.py::test_a_sweep_prunes_and_resumes_a_killed_trial"),
        ("sweep_metrics_gen_ignored", "train/loop.py", '        options |= {"num_gen": cfg.run.metrics_gen}\n', "",
         "run.py::test_a_sweep_prunes_and_resumes_a_killed_trial"),
        ("sweep_folder_from_database_unchecked", "sweep/study.py", "if isinstance(folder, str) and folder.isdigit()",
         "if folder",
         "parts.py::test_a_trials_folder_is_its_number_or_the_number_it_continues_never_a_path_from_the_database"),
        ("sweep_leaves_before_its_trials", "sweep/study.py", "        state.stopping.set()\n        _wait_all(done)",
         "        state.stopping.set()",
         "run.py::test_a_sweep_stopped_by_sigterm_stops_its_trial_after_a_checkpoint_and_queues_it_to_continue"),
    )),
    # one event path: the fan-out passes every event to every sink, trackers close before log.txt
    M("fanout_tick_misses_the_last_sink", "events.py",
      "        for sink in self.sinks:\n            sink.tick(record, alerts, nimg)",
      "        for sink in self.sinks[:-1]:\n            sink.tick(record, alerts, nimg)",
      (SINKS + "test_a_sink_given_at_construction_receives_every_event_in_order",)),
    M("fanout_close_stops_at_a_failing_sink", "events.py",
      "        with contextlib.ExitStack() as closing:\n            for sink in reversed(self.sinks):  # an exit stack "
      "runs its callbacks last in, first out\n                closing.callback(sink.close, outcome)",
      "        for sink in self.sinks:\n            sink.close(outcome)",
      (SINKS + "test_every_sink_is_closed_when_one_fails_to_close",)),
    M("trackers_closed_after_log_txt", "train/sinks.py",
      "return [*sinks, *([tracked] if tracked is not None else []), text]",
      "return [*sinks, text, *([tracked] if tracked is not None else [])]",
      (SINKS + "test_a_failing_tracker_stops_none_of_the_other_sinks_and_its_warnings_reach_log_txt",)),
    # One checkpoint schema: capture, restore and the validator each go through checkpoint/layout.py's entries
    M("ckpt_schema_restore_skips_an_entry", "train/checkpointing.py",
      "        if _PARTS[key].restore is not None:", '        if _PARTS[key].restore is not None and key != "augment":',
      ("tests/checkpoint/test_checkpoint_old_format.py::test_the_old_state_is_restored_bit_for_bit",)),
    M("ckpt_schema_check_skips_an_entry", "checkpoint/resumable.py",
      "    for key, check_entry in _CHECKS.items():", "    for key, check_entry in list(_CHECKS.items())[:-1]:",
      ("tests/checkpoint/test_checkpoint_resumable.py::"
       "test_a_checkpoint_holds_the_layouts_entries_in_order_and_each_one_is_checked",)),
    M("ckpt_schema_capture_in_another_order", "train/checkpointing.py",
      "for key in STATE_KEYS}", "for key in sorted(STATE_KEYS)}", ("tests/checkpoint/test_checkpoint_resumable.py::"
       "test_a_checkpoint_holds_the_layouts_entries_in_order_and_each_one_is_checked",)),
    # The data source owns its position: each batch taken moves it, and a restore keeps a stream of this world size only
    M("data_source_position_stands_still", "data/source.py", "        self.position += self._step\n", "",
      ("tests/train/test_train_shards.py::test_the_data_source_owns_its_position",)),
    M("data_source_keeps_another_worlds_stream", "data/source.py",
      'if saved is not None and saved["world_size"] == self.world_size:', "if saved is not None:",
      ("tests/train/test_train_shards.py::test_a_new_world_size_starts_a_new_stream_and_says_so",)),
    M("shard_stored_hash_forgotten", "data/shardset.py", "        return self.content_hash\n", "        return None\n",
      (SHARDS + "test_info_and_verify_name_the_damaged_shard",)),
    # every command's options declared on fields: the derived checks, a file option, what the options set
    M("declared_values_never_refused", "option.py",
      "    problems = value_problems(options, values)\n    if problems:", "    problems = []\n    if problems:",
      ("tests/checkpoint/test_checkpoint_diff_snapshots.py::"
       "test_limit_prints_that_many_differences_and_counts_them_all_and_is_bounded",
       "tests/hostile/test_hostile_options.py::test_every_declared_commands_bad_numbers_and_choices_are_one_line_each")),
    M("declared_file_option_takes_a_folder", "cli/declared.py", "    kind = FILE if d.option.file else kind\n", "",
      ("tests/report/test_report_page.py::test_report_out_naming_a_folder_is_refused_before_anything_is_read",)),
    M("diff_limit_ignored", "cli/checkpoint.py", "differences[:limit]", "differences",
      ("tests/checkpoint/test_checkpoint_diff_snapshots.py::"
       "test_limit_prints_that_many_differences_and_counts_them_all_and_is_bounded",)),
    M("doctor_settings_record_the_output_format", "doctor/options.py", 'if name != "as_json"', "if name",
      ("tests/doctor/test_doctor_cli.py::test_cpu_path_json_only_with_data",)),
    # nets/layers.py survivors of the mutation pass
    M("fp16_prescale_by_the_channels_only", "nets/layers.py", "(1 / math.sqrt(in_ch * kh * kw) /",
      "(1 / math.sqrt(in_ch) /",
      ("tests/nets/test_nets_layers.py::test_modulated_conv2d_fp16_is_finite_wherever_its_result_fits_fp16",)),
    M("conv_clamp_ignores_the_gain", "nets/layers.py",
      "x.clamp(-self.conv_clamp * gain, self.conv_clamp * gain)", "x.clamp(-self.conv_clamp, self.conv_clamp)",
      ("tests/nets/test_nets_layers.py::test_conv_layer_clamps_to_conv_clamp_times_its_gain",)),
    M("pixel_norm_without_eps", "nets/layers.py", "(x.square().mean(dim=1, keepdim=True) + eps)",
      "x.square().mean(dim=1, keepdim=True)",
      ("tests/nets/test_nets_layers.py::test_normalize_2nd_moment_keeps_a_zero_row_zero",)),
    M("fp16_down_to_4x4", "nets/layers.py", "+ 1 - num_fp16_res), 8)", "+ 1 - num_fp16_res), 4)",
      ("tests/nets/test_nets_layers_arch.py::test_a_generator_with_every_resolution_in_fp16_keeps_its_4x4_block_in_fp32",
       "tests/nets/test_nets_layers_arch.py::test_fp16_runs_in_the_top_resolutions_and_never_below_8")),
    # metrics/ppl.py and swd.py survivors of the mutation pass
    M("ppl_slerp_cosine_unclamped", "metrics/ppl.py", "keepdim=True).clamp(-1, 1)", "keepdim=True)",
      (PPL_TESTS + "test_slerp_of_nearly_parallel_or_opposite_latents_stays_finite_and_on_the_arc",)),
    M("ppl_every_path_takes_the_first_label", "metrics/ppl.py", 'position_rng(seed, "c", p)',
      'position_rng(seed, "c", 0)',
      (PPL_TESTS + "test_a_conditional_generator_takes_the_datasets_labels_and_needs_the_dataset",)),
    M("swd_flat_channel_divided_by_zero", "metrics/swd.py", ".clamp_min(1e-8)", "",
      ("tests/metrics/test_metrics_swd.py::"
       "test_descriptors_are_normalised_per_colour_channel_and_a_flat_channel_is_zero",)),
    M("swd_avg_is_the_sum_of_the_levels", "metrics/swd.py", "sum(levels) / len(levels)", "sum(levels)",
      ("tests/metrics/test_metrics_swd.py::test_swd_is_zero_for_identical_sets_and_grows_with_noise",)),
    # augment/diffaugment.py and corrupt.py survivors of the mutation pass
    M("diffaug_rows_take_the_column_shift", "augment/diffaugment.py",
      "[None, :] - shifts[0]  # [N, H]", "[None, :] - shifts[1]  # [N, H]",
      (DIFFAUG_REF + "test_translation_reaches_every_shift_up_to_an_eighth_rounded_half_up_and_no_further",)),
    M("diffaug_saturation_up_to_one", "augment/diffaugment.py", "0.0, 2.0, images", "0.0, 1.0, images",
      (DIFFAUG_REF + "test_color_is_brightness_saturation_and_contrast_in_their_documented_ranges",)),
    M("ada_filter_bands_ignore_the_vertical_frequency", "augment/corrupt.py", "torch.maximum(fx, fy)",
      "torch.maximum(fx, fx)",
      (CORRUPT_REF + "test_filter_bands_take_the_larger_of_the_vertical_and_horizontal_frequency",)),
    M("ada_gate_applies_at_a_draw_equal_to_p", "augment/ops.py",
      "return torch.rand(n, device=p.device, generator=generator) < p",
      "return torch.rand(n, device=p.device, generator=generator) <= p",
      (CORRUPT_REF + "test_noise_adds_gaussian_noise_of_a_drawn_sigma_to_the_gated_images_only",)),
    # augment/ops.py survivors of the mutation pass
    M("ada_gate_takes_a_draw_equal_to_p", "augment/ops.py", "generator=generator) < p", "generator=generator) <= p",
      ("tests/train/test_augment_draws.py::test_p_0_never_transforms_even_on_a_draw_of_exactly_0",)),
    M("ada_integer_translation_axes_swapped", "augment/ops.py", "_translate2d(-2 * tx, -2 * ty)",
      "_translate2d(-2 * ty, -2 * tx)",
      ("tests/train/test_augment.py::test_integer_translation_matches_mirrored_shift",)),
    M("ada_fractional_translation_one_draw_for_both_axes", "augment/ops.py", "-t[:, 1] * height)", "-t[:, 0] * height)",
      ("tests/train/test_augment.py::test_geometric_parameter_distributions",)),
    M("ada_rotation_angle_without_pi", "augment/ops.py",
      "theta = (torch.rand(n, device=p.device, generator=generator) * 2 - 1) * math.pi",
      "theta = torch.rand(n, device=p.device, generator=generator) * 2 - 1",
      ("tests/train/test_augment_draws.py::test_rotation_angles_are_uniform_on_the_circle",)),
)  # fmt: skip


def copy_tree(dest: Path) -> Path:
    """src/, tests/ and pyproject.toml (pytest's settings) into dest; returns dest."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache")
    for folder in ("src", "tests"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def apply(dest: Path, mutant: Mutant) -> None:
    path = dest / "src" / "ganforge" / mutant.path
    text = path.read_text()
    count = text.count(mutant.old)
    if count != 1:
        raise SystemExit(f"{mutant.name}: {mutant.old!r} occurs {count} times in src/ganforge/{mutant.path}")
    mutated = text.replace(mutant.old, mutant.new)
    try:  # a mutant that breaks the syntax would only be "killed" by an import error, which proves nothing
        if path.suffix == ".py":  # the explorer's page script is mutated too; the browser tests run it
            compile(mutated, str(path), "exec")
    except SyntaxError as error:
        raise SystemExit(f"{mutant.name}: the mutated src/ganforge/{mutant.path} does not compile ({error})") from None
    path.write_text(mutated)


def check_applies(mutants: list[Mutant]) -> None:
    """Apply each mutant to a copy of src/ alone (no tests run); exits naming the first whose text is not found once
    or whose mutated file does not compile."""
    with tempfile.TemporaryDirectory(prefix="ganforge-applies-") as tmp:
        for mutant in mutants:
            dest = Path(tmp) / mutant.name
            shutil.copytree(ROOT / "src" / "ganforge", dest / "src" / "ganforge",
                            ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
            apply(dest, mutant)
    print(f"all {len(mutants)} mutants apply")


def environment(dest: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(dest / "src"), OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))


def check_imports_copy(dest: Path) -> None:
    """The copy must shadow the editable install, in this process's interpreter and in the subprocesses tests start."""
    out = subprocess.run([sys.executable, "-c", "import ganforge; print(ganforge.__file__)"], cwd=dest,
                         env=environment(dest), capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    if not Path(out).is_relative_to(dest):
        raise SystemExit(f"the copy in {dest} is not what imports (got {out}); is ganforge installed non-editable?")


def run_tests(dest: Path, tests: tuple[str, ...], timeout: float = TIMEOUT_S) -> tuple[str, float, str]:
    """-> (outcome, seconds, output tail). pytest exits 1 when tests fail; 0 passed; anything else is an error."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=dest, env=environment(dest), capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, ""
    outcome = {0: "passed", 1: "failed"}.get(proc.returncode, f"error (pytest exit {proc.returncode})")
    return outcome, time.monotonic() - start, (proc.stdout + proc.stderr)[-2000:]


def baseline(mutants: list[Mutant]) -> None:
    """Every test a mutant names must pass on the unmutated copy."""
    tests = tuple(dict.fromkeys(test for m in mutants for test in m.tests))
    with tempfile.TemporaryDirectory(prefix="ganforge-baseline-") as tmp:
        dest = copy_tree(Path(tmp))
        check_imports_copy(dest)
        outcome, seconds, tail = run_tests(dest, tests, TIMEOUT_S * -(-len(tests) // 100))
    print(f"baseline: {len(tests)} test selections {outcome} in {seconds:.0f} s", flush=True)
    if outcome != "passed":
        raise SystemExit(f"the unmutated tests do not pass, so kills would mean nothing:\n{tail}")


def check(mutant: Mutant) -> tuple[str, float]:
    """Killed (tests failed or timed out), survived (tests passed), or error (the tests could not run)."""
    with tempfile.TemporaryDirectory(prefix=f"ganforge-{mutant.name}-") as tmp:
        dest = copy_tree(Path(tmp))
        apply(dest, mutant)
        outcome, seconds, tail = run_tests(dest, mutant.tests)
    verdict = {"failed": "killed", "timeout": "killed", "passed": "SURVIVED"}.get(outcome, "ERROR")
    if verdict == "ERROR":
        print(tail, file=sys.stderr)
    return verdict, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="check only this mutant (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their tests, then exit")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run of the tests on unmutated code")
    parser.add_argument(
        "--check-applies",
        action="store_true",
        help="only check that every mutant's text occurs once (after moving code), then exit",
    )
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    unknown = set(args.only or ()) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutants: {', '.join(sorted(unknown))}")
    if args.list:
        for m in chosen:
            print(f"{m.name:28} src/ganforge/{m.path:22} {' '.join(m.tests)}")
        return 0
    if args.check_applies:
        check_applies(chosen)
        return 0
    if not args.no_baseline:
        baseline(chosen)
    start, verdicts = time.monotonic(), []
    print(f"{'mutant':28} {'file':32} {'result':9} {'seconds':>7}")
    for mutant in chosen:
        verdict, seconds = check(mutant)
        verdicts.append(verdict)
        print(f"{mutant.name:28} {'src/ganforge/' + mutant.path:32} {verdict:9} {seconds:7.1f}", flush=True)
    killed = verdicts.count("killed")
    print(f"{killed}/{len(chosen)} mutants killed in {time.monotonic() - start:.0f} s")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
