"""Predicted against published training runs (``data/validation/training_runs.csv``).

Each row is turned into a scenario (model preset, accelerator, GPU count, fabric
bandwidth, the published parallel plan) and estimated with the default efficiency set; the
published figure is converted to a step time with the source's own FLOP definition:

* ``eq3_tflops``: Narayanan 2021 Eq. 3 FLOPs per iteration / (TFLOP/s per GPU x GPUs)
  (Megatron-LM and Megatron-DeepSpeed report hardware FLOPs with full recomputation);
* ``tokens_per_s``: global batch tokens / throughput (llm-foundry);
* ``step_time_s``: the iteration time as published;
* ``model_tflops``: model FLOPs per step (no recomputation; Megatron-LM's
  ``num_floating_point_operations``, Korthikanti 2022 Eq. 7 generalised) / (TFLOP/s x GPUs);
* ``mfu``: model FLOPs per step (this package's count) / (MFU x peak x GPUs).

The error is ``predicted / published - 1`` on the step time (positive = too slow).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from gpucluster_lib.catalog import Catalog, load_catalog
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.resources import data_path
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import flops as fl
from gpucluster_lib.training.estimate import estimate
from gpucluster_lib.workloads.transformer import resolve_transformer

RUNS_PATH = data_path("validation", "training_runs.csv")


def load_runs(path: str | Path | None = None) -> pd.DataFrame:
    # a software release stays text ('2.10' is not 2.1)
    return pd.read_csv(path or RUNS_PATH, keep_default_na=False, dtype={"transformer_engine": str})


def _flag(row: dict[str, Any], key: str) -> bool | None:
    v = str(row.get(key, "")).strip().lower()
    return None if v == "" else v == "true"


def _overrides(text: str) -> dict[str, Any]:
    """``key=value`` pairs separated by spaces (architecture fields of the model section)."""
    out: dict[str, Any] = {}
    for item in str(text or "").split():
        k, v = item.split("=", 1)
        out[k] = int(v) if v.lstrip("-").isdigit() else (v == "true" if v in ("true", "false") else v)
    return out


def scenario_for(row: dict[str, Any]) -> Any:
    model: dict[str, Any] = {"preset": row["model_preset"], **_overrides(row.get("model_overrides", ""))}
    if str(row.get("layers", "")).strip():
        model["layers"] = int(row["layers"])
    gpus = int(row["gpus"])
    par: dict[str, Any] = {
        "tensor": int(row["tp"]), "pipeline": int(row["pp"]), "context": int(row["cp"]),
        "global_batch_size": int(row["gbs"]),
        "sequence_parallel": str(row["sp"]).lower() == "true", "zero_stage": int(row["zero"]),
        "sharded_collectives": row["collectives"], "distributed_optimizer": False, "tp_comm_overlap": False,
    }
    # fields the source does not state are left to the plan search (the published plan's other fields fixed)
    for key, col, conv in (("virtual_stages", "vp", int), ("micro_batch_size", "mb", int), ("recompute", "recompute", str)):
        if str(row.get(col, "")).strip():
            par[key] = conv(row[col])
        else:
            par["auto"] = True
    par.update(_overrides(row.get("pipeline_layout", "")))
    for key in ("tp_comm_overlap", "distributed_optimizer", "overlap_p2p_comm"):
        if _flag(row, key) is not None:
            par[key] = _flag(row, key)
    if _flag(row, "dp_overlap") is not None:
        par["overlap_grad_reduce"] = par["overlap_param_gather"] = _flag(row, "dp_overlap")
    training: dict[str, Any] = {"precision": row["precision"],
                                "flash_attention": str(row["flash_attention"]).lower() == "true"}
    if str(row.get("framework", "")).strip():
        training["framework"] = row["framework"]
    if str(row.get("attention_kernel", "")).strip():  # the run's fused attention kernel (llm-foundry: triton)
        training["attention_kernel"] = row["attention_kernel"]
    if str(row.get("fp8_recipe", "")).strip():  # the run's FP8 scaling recipe (empty: the framework's)
        training["fp8_recipe"] = str(row["fp8_recipe"]).strip()
    if str(row.get("transformer_engine", "")).strip():  # the run's Transformer Engine release (empty: a current one)
        training["transformer_engine"] = str(row["transformer_engine"]).strip()
    if str(row.get("cross_entropy_loss", "")).strip():  # the run's loss (NeMo 1.x configs without the fusion flag)
        training["cross_entropy_loss"] = str(row["cross_entropy_loss"]).strip()
    if str(row.get("checkpoint_early_stop", "")).strip():  # the run's PyTorch checkpoint (before 2.1: no early stop)
        training["checkpoint_early_stop"] = str(row["checkpoint_early_stop"]).strip().lower() == "true"
    for key in ("param_gather_precision", "grad_reduce_precision"):  # the run's FSDP mixed precision
        if str(row.get(key, "")).strip():
            training[key] = row[key]
    for key in ("optimizer_state_precision", "master_weights"):  # the run's optimizer (NeMo 1.x Apex DistributedFusedAdam)
        if str(row.get(key, "")).strip():
            training[key] = row[key]
    if _flag(row, "distribute_saved_activations"):  # Megatron --distribute-saved-activations, metaseq's flag
        training["distribute_saved_activations"] = True
    if _flag(row, "fp8_params") is not None:  # the run's FP8 primary weights (NeMo fp8_params, --fp8-param-gather)
        training["fp8_params"] = _flag(row, "fp8_params")
    if _flag(row, "defer_output_wgrad") is not None:  # Megatron-Core defer_embedding_wgrad_compute as the run set it
        training["defer_output_wgrad"] = _flag(row, "defer_output_wgrad")
    if str(row.get("wgrad_deferral_limit", "")).strip():  # its wgrad_deferral_limit (0 = all micro-batches)
        limit = str(row["wgrad_deferral_limit"]).strip()
        if not limit.isdigit():
            raise GpuClusterError(f"run {row.get('run_id', '?')}: wgrad_deferral_limit must be a whole number of "
                                  f"micro-batches (0 = all) or empty, got {limit!r}")
        training["wgrad_deferral_limit"] = int(limit)
    if str(row.get("zero3_max_live_params", "")).strip():  # the run's DeepSpeed stage3_max_live_parameters
        training["zero3_max_live_parameters"] = float(row["zero3_max_live_params"])
    return from_dict({
        "name": str(row.get("run_id", "published run")),
        "model": model,
        "hardware": {"accelerator": row["accelerator"], "gpus_per_node": 8, "nodes": gpus // 8},
        "network": {"inter_node_gbps_per_gpu": float(row["fabric_gbps_per_gpu"])},
        "parallelism": par,
        "training": training,
    })


def published_step_time_s(row: dict[str, Any], peak_tflops: float) -> float:
    """The published figure converted to seconds per step (see the module docstring)."""
    arch = resolve_transformer(scenario_for(row).model)
    gbs, gpus, v = int(row["gbs"]), int(row["gpus"]), float(row["published_value"])
    kind = row["published_kind"]
    if kind == "eq3_tflops":
        f = fl.narayanan_eq3_flops(gbs, arch.seq_length, arch.layers, arch.hidden_size, arch.vocab_size)
        return f / (v * 1e12 * gpus)
    if kind == "tokens_per_s":
        return gbs * arch.seq_length / v
    if kind == "step_time_s":
        return v
    if kind == "model_tflops":  # Megatron-LM num_floating_point_operations: Korthikanti model FLOPs
        f = fl.model_flops_per_token(arch) * gbs * arch.seq_length
        return f / (v * 1e12 * gpus)
    if kind == "mfu":
        return fl.model_flops_per_token(arch) * gbs * arch.seq_length / (v * peak_tflops * 1e12 * gpus)
    raise ValueError(f"unknown published_kind {kind!r}")


def compare(runs: pd.DataFrame | None = None, catalog: Catalog | None = None) -> pd.DataFrame:
    """One row per run: published and predicted step time [s], error, MFU, the plan label, the run's training
    precision and framework (by name)."""
    runs = load_runs() if runs is None else runs
    cat = catalog or load_catalog()
    out = []
    for row in runs.to_dict(orient="records"):
        sc = scenario_for(row)
        est = estimate(sc, cat)
        peak = est.assumptions["peak_tflops"]
        pub = published_step_time_s(row, peak)
        out.append({
            "run_id": row["run_id"], "set": row["set"], "label": row["label"],
            "accelerator": row["accelerator"], "gpus": int(row["gpus"]),
            "precision": row["precision"], "framework": est.assumptions["framework"]["name"],
            "plan": est.plan.label(), "published_step_s": pub, "predicted_step_s": est.step_time_s,
            "error": est.step_time_s / pub - 1.0, "predicted_mfu": est.mfu,
            "published_mfu": est.mfu * est.step_time_s / pub, "fits": est.fits,
            "plan_fields": est.plan.to_dict(),
        })
    return pd.DataFrame(out)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median and maximum absolute step-time error per set."""
    g = df.assign(abs_error=df["error"].abs()).groupby("set")["abs_error"]
    return pd.DataFrame({"rows": g.size(), "median_abs_error": g.median(), "max_abs_error": g.max()})
