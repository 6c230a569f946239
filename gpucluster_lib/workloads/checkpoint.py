"""Size of a training checkpoint: what the storage, the reliability and the cost all read.

References
----------
.. [1] Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
       Parameter Models", SC20, Sec. 3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes per
       parameter (fp16 weights, fp16 gradients, fp32 master weights + momentum + variance).
"""

from __future__ import annotations

from gpucluster_lib.checks import require_positive
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.workloads.transformer import load_presets, resolve_transformer
from gpucluster_lib.workloads.vision import is_vision_model, resolve_vision

#: Bytes per parameter in a training checkpoint with mixed-precision Adam [1]: bf16 weights
#: (2) + fp32 master weights (4) + Adam momentum (4) + variance (4); gradients are not saved.
CHECKPOINT_BYTES_PER_PARAM = 14


def checkpoint_bytes(params: float, bytes_per_param: float = CHECKPOINT_BYTES_PER_PARAM) -> float:
    """Size of a full training checkpoint [B]: parameters x bytes per parameter.

    Default 14 B/parameter: bf16 weights + fp32 master weights + Adam m and v
    (Rajbhandari et al. 2020, Sec. 3.1, without the 2 B of gradients).
    """
    require_positive(params=params, bytes_per_param=bytes_per_param)
    return params * bytes_per_param


def scenario_checkpoint_bytes(scenario: Scenario) -> float:
    """Checkpoint size of the scenario's model [B] = params x bytes per parameter (default 14).

    A transformer's parameters come from its architecture; a CNN/ViT preset's from
    ``data/vision_models.yaml`` (ResNet-50: 25.6 M), checkpointed with the same Adam state.
    """
    per_param = scenario.reliability.checkpoint_bytes_per_param or CHECKPOINT_BYTES_PER_PARAM
    if _is_vision(scenario):
        return checkpoint_bytes(resolve_vision(scenario.model).params, per_param)
    return checkpoint_bytes(resolve_transformer(scenario.model).total_params(), per_param)


def _is_vision(scenario: Scenario) -> bool:
    spec = scenario.model
    return spec.kind in ("cnn", "vit") or (spec.preset is not None and spec.preset not in load_presets()
                                           and is_vision_model(spec))


def has_checkpoint(scenario: Scenario) -> bool:
    """Whether the scenario trains a model with a checkpoint: a transformer or a CNN/ViT preset
    (the reliability stage assesses both)."""
    if has_transformer(scenario):
        return True
    try:
        return _is_vision(scenario) and resolve_vision(scenario.model).params > 0
    except GpuClusterError:
        return False


def has_transformer(scenario: Scenario) -> bool:
    """Whether the scenario's model resolves to a transformer (a preset or full architecture)."""
    try:
        resolve_transformer(scenario.model)
    except GpuClusterError:
        return False
    return True
