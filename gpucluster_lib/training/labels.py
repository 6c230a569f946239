"""Human names of the training estimate's parts, one table for every front end.

The keys are those of ``TrainingEstimate.time_breakdown_s`` (seconds per step) and
``memory_per_gpu_bytes`` (bytes per GPU); the app's charts (:mod:`gpucluster_lib.charts.training`)
and the ``gpucluster estimate`` text both name the parts with these words. Kept apart from the
charts so that the command line reads them without importing altair.
"""

from __future__ import annotations

#: the parts of a training step, in the order the step chart stacks them
BREAKDOWN_LABELS = {
    "compute": "compute", "recompute": "recompute", "tp_comm": "TP comm", "cp_comm": "CP comm",
    "ep_comm": "EP comm", "pp_comm": "PP comm", "bubble": "pipeline bubble", "dp_comm": "DP comm (exposed)",
    "optimizer": "optimizer", "framework": "framework: pipeline slots and fixed time per step",
    "overhead": "step overhead (a share of the step)",
}
#: the parts of a GPU's memory, in the order the memory chart stacks them
MEMORY_LABELS = {"weights": "weights", "gradients": "gradients", "optimizer_states": "optimizer states",
                 "gather_buffers": "gathered parameters (ZeRO-3)",
                 "unreduced_gradients": "gradients awaiting reduction (ZeRO-3)", "activations": "activations",
                 "other": "other (context, buffers, fragmentation)"}
#: memory parts that only ZeRO-3 fills: text output leaves them out when they are zero
ZERO3_ONLY_MEMORY = ("gather_buffers", "unreduced_gradients")


def memory_parts(memory: dict[str, float], keys) -> list[str]:
    """The memory parts to name in text, in ``keys`` order: every part but the ZeRO-3-only ones
    when they are zero (under ZeRO 0-2 and with no gradients waiting)."""
    return [k for k in keys if k != "total" and not (k in ZERO3_ONLY_MEMORY and memory.get(k, 0.0) == 0)]
