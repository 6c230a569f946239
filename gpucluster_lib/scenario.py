"""The scenario: one declarative description of a cluster design.

A scenario groups, by meaning, everything a calculation needs:

``model``        the workload (a preset name or a full architecture)
``hardware``     accelerator, server or parts, node count
``network``      fabric topology, switch, NICs
``parallelism``  how training is split (TP/PP/DP/CP/EP, ZeRO, recompute) or ``auto``
``training``     token budget, precision, deadline
``inference``    serving precision, traffic and latency targets
``facility``     rack limits, cooling, PUE, energy price, grid carbon intensity
``costs``        prices (overrides of the catalogue estimates), years
``reliability``  failure rates, checkpointing
``operations``   software stack, scheduler, monitoring, data management
``storage``      the data set, read/write bandwidth, fast and capacity tiers

Every section is optional where a default exists. Loading is strict: unknown
keys, wrong types and out-of-range values raise :class:`ScenarioError` with the
key path (``hardware.nodes: must be a positive integer, got -4``); unknown
catalogue ids raise :class:`UnknownIdError` with the closest ids.

Each section is a frozen dataclass; constraints live in the field metadata
(``ge``/``gt``/``le``/``choices``), and one generic builder enforces them, so a
new field is one line.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Union, get_args, get_origin

import yaml

from gpucluster_lib.checks import decode_text
from gpucluster_lib.errors import ScenarioError, excerpt, one_of, yaml_value
from gpucluster_lib.formatting import number_words

#: Engine token budget per step when ``inference.max_num_tokens`` is absent [tokens]: TensorRT-LLM's
#: default ``max_num_tokens`` (``trtllm-build --max_num_tokens``, 8192), raised to one whole prompt when it is longer.
DEFAULT_MAX_NUM_TOKENS = 8192

# --------------------------------------------------------------------------- helpers


def f(default: Any = None, *, doc: str = "", unit: str = "", **rules: Any) -> Any:
    """A dataclass field with validation rules (``ge``, ``gt``, ``le``, ``lt``) and a doc."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: type(d)(d), metadata={"doc": doc, "unit": unit, **rules})
    return field(default=default, metadata={"doc": doc, "unit": unit, **rules})


def sub(cls: type) -> Any:
    """A nested section field that defaults to the section's defaults."""
    return field(default_factory=cls, metadata={"doc": cls.__doc__ or ""})


# --------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class ModelSpec:
    """The workload: a preset name (``data/models.yaml``) and/or architecture fields.

    Fields given next to a preset override the preset's values.
    """

    preset: str | None = f(None, max_len=64, doc="preset id from data/models.yaml, e.g. 'gpt3-175b'")
    kind: Literal["transformer", "cnn", "vit"] | None = f(None, doc="workload family")
    layers: int | None = f(None, gt=0, le=2048)
    hidden_size: int | None = f(None, gt=0, le=262_144)
    attention_heads: int | None = f(None, gt=0, le=4096)
    kv_heads: int | None = f(None, gt=0, le=4096, doc="equal to attention_heads for MHA, 1 for MQA")
    head_dim: int | None = f(None, gt=0, le=4096, doc="defaults to hidden_size / attention_heads")
    ffn_hidden_size: int | None = f(None, gt=0, le=1_048_576)
    ffn_type: Literal["gelu", "swiglu", "relu2"] | None = f(None)
    vocab_size: int | None = f(None, gt=0, le=4_194_304)
    seq_length: int | None = f(None, gt=0, le=16_777_216, unit="tokens")
    tied_embeddings: bool | None = f(None)
    position_embedding: Literal["learned", "rope", "alibi", "none"] | None = f(None)
    bias: bool | None = f(None, doc="linear layers carry biases (GPT-2/3 style)")
    norm: Literal["layernorm", "rmsnorm"] | None = f(None)
    num_experts: int | None = f(None, ge=1, le=4096, doc="routed experts per MoE layer (1 = dense)")
    experts_per_token: int | None = f(None, ge=1, le=256, doc="top-k")
    expert_ffn_hidden_size: int | None = f(None, gt=0, le=1_048_576)
    shared_experts: int | None = f(None, ge=0, le=256)
    moe_layer_interval: int | None = f(None, ge=1, le=2048, doc="every k-th layer is MoE")
    dense_layers: int | None = f(None, ge=0, le=2048, doc="leading dense layers before the MoE layers")
    q_lora_rank: int | None = f(None, ge=0, le=262_144, doc="MLA: rank of the query down-projection (0 = none)")
    kv_lora_rank: int | None = f(None, ge=0, le=262_144, doc="MLA: rank of the compressed KV latent (0 = standard attention)")
    qk_rope_head_dim: int | None = f(None, ge=0, le=4096, doc="MLA: decoupled RoPE dimension per head")
    v_head_dim: int | None = f(None, ge=0, le=4096, doc="MLA: value head dimension (0 = head_dim)")
    hidden_dropout: float | None = f(None, ge=0, lt=1, doc="dropout probability after the attention and FFN "
                                                         "outputs (0: no mask is stored); default the "
                                                         "preset's, else 0.1 (Megatron-LM)")
    attention_dropout: float | None = f(None, ge=0, lt=1, doc="dropout probability on the attention "
                                                            "probabilities; default the preset's, else 0.1")


@dataclass(frozen=True)
class CountSpec:
    id: str = f("", max_len=64, doc="catalogue id")
    count: int = f(1, ge=0, le=64)


@dataclass(frozen=True)
class PsuSpec:
    count: int = f(2, gt=0, le=32)
    rating_w: float = f(2000.0, gt=0, le=20_000, unit="W")
    redundancy: str = f("1+1", max_len=16, doc="N+M: N supplies carry the load, M are spares, e.g. '3+1'")


@dataclass(frozen=True)
class PartsSpec:
    """A node built from parts (used when ``hardware.server`` is not a complete system)."""

    chassis: str | None = f(None, max_len=64, doc="servers.csv id of kind 'chassis'")
    cpus: CountSpec | None = f(None)
    memory_gb: float | None = f(None, gt=0, le=65_536, unit="GB")
    nics: CountSpec | None = f(None)
    mgmt_nics: CountSpec | None = f(None)
    drives: list[CountSpec] = f([], max_items=64)
    psus: PsuSpec | None = f(None)
    psu_margin: float = f(0.2, ge=0, lt=1, doc="share of the N supplies' capacity kept free at peak draw (0.2: load to at most 80%)")


@dataclass(frozen=True)
class HardwareSpec:
    accelerator: str | None = f(None, max_len=64, doc="accelerators.csv id")
    server: str | None = f(None, max_len=64, doc="servers.csv id")
    gpus_per_node: int | None = f(None, gt=0, le=1024)
    nodes: int | None = f(None, gt=0, le=100_000)
    gpus: int | None = f(None, gt=0, le=1_000_000, doc="total accelerators; alternative to nodes")
    parts: PartsSpec | None = f(None)
    head_nodes: int = f(1, ge=0, le=16, doc="management / scheduler nodes (2 for HA)")


@dataclass(frozen=True)
class NetworkSpec:
    topology: Literal["fat-tree", "leaf-spine", "rail-optimized", "ring", "tree", "single-switch"] = f("fat-tree")
    switch: str | None = f(None, max_len=64, doc="switches.csv id of the compute fabric")
    nic: str | None = f(None, max_len=64, doc="nics.csv id of the compute NICs")
    nics_per_node: int | None = f(None, gt=0, le=32)
    oversubscription: float = f(1.0, ge=1.0, le=64, doc="downlink:uplink bandwidth ratio at the leaves (1 = non-blocking)")
    tiers: int | None = f(None, ge=1, le=3)
    inter_node_gbps_per_gpu: float | None = f(None, gt=0, le=100_000, unit="Gb/s",
                                              doc="override of the fabric bandwidth per GPU")
    scalable_unit_nodes: int | None = f(None, gt=0, le=100_000, doc="nodes per scalable unit (rail-optimised)")
    planes: int = f(1, ge=1, le=8, doc="independent compute-fabric planes; each node's ports are split over them "
                    "(multi-plane Ethernet AI fabrics)")
    mgmt_switch: str | None = f(None, max_len=64, doc="switches.csv id of the management network")
    storage_network: bool = f(True)
    # -- topology design -----------------------------------------------------------------
    fabric_manager_ports: int = f(0, ge=0, le=64, doc="compute-fabric ports of a fabric manager (UFM) appliance; "
                                  "NVIDIA's DGX H100 SuperPOD gives it one node slot (4 ports)")
    nodes_per_rack: int | None = f(None, gt=0, le=256, doc="compute nodes per rack (default: from rack power and U)")
    racks_per_row: int = f(10, gt=0, le=100, doc="racks in one row (sets the cable length classes)")
    mgmt_ports_per_node: int | None = f(None, ge=0, le=16, doc="management Ethernet ports per node (default: the "
                                        "server's, else 2)")
    mgmt_link_gbps: float = f(10.0, gt=0, le=1600, unit="Gb/s", doc="speed of the management links (at least 10 GbE)")
    storage_switch: str | None = f(None, max_len=64, doc="switches.csv id of the storage fabric (default: the compute switch)")
    storage_ports_per_node: int | None = f(None, ge=0, le=32, doc="storage-fabric ports per node (default: the "
                                           "server's storage NICs, else 1)")
    storage_oversubscription: float = f(3.0, ge=1.0, le=64, doc="leaf oversubscription of the storage network; "
                                        "3:1 as in Juniper's validated AI front-end fabric design")
    storage_target_ports: int | None = f(None, ge=0, le=100_000, doc="storage-fabric ports of the file system "
                                         "(NFS/Lustre servers); default a quarter of the node ports")


@dataclass(frozen=True)
class ParallelismSpec:
    """Training parallel plan. ``auto: true`` searches the fields left empty."""

    auto: bool = f(False)
    tensor: int | None = f(None, gt=0, le=4096)
    pipeline: int | None = f(None, gt=0, le=2048)
    data: int | None = f(None, gt=0, le=1_000_000)
    context: int | None = f(None, gt=0, le=4096)
    expert: int | None = f(None, gt=0, le=4096)
    virtual_stages: int | None = f(None, gt=0, le=256, doc="interleaved 1F1B model chunks per GPU; every stage's layers must split into them evenly")
    micro_batch_size: int | None = f(None, gt=0, le=65_536, unit="sequences")
    global_batch_size: int | None = f(None, gt=0, le=100_000_000, unit="sequences")
    recompute: Literal["none", "selective", "full"] | None = f(None)
    sequence_parallel: bool | None = f(None)
    zero_stage: int | None = f(None, ge=0, le=3)
    distributed_optimizer: bool | None = f(None)
    allow_tp_across_nodes: bool = f(False)
    dp_overlap: float | None = f(None, ge=0, le=1, doc="fraction of DP communication hidden behind compute")
    sharded_collectives: Literal["hierarchical", "flat"] | None = f(
        None, doc="ZeRO/FSDP/DP collectives striped over all NICs of a node (hierarchical, NCCL rings "
        "over rails) or limited to each GPU's own NIC (flat, e.g. DeepSpeed ZeRO-3 in Narayanan 2021)")
    pipeline_layers: list[int] | None = f(None, ge=0, le=2048, max_items=256, doc="layers on each pipeline stage, first to last (uneven split)")
    first_stage_layers: int | None = f(None, ge=0, le=2048, doc="layers on the first pipeline stage (the rest split evenly)")
    last_stage_layers: int | None = f(None, ge=0, le=2048, doc="layers on the last pipeline stage (the rest split evenly)")
    embedding_in_pipeline_split: bool = f(False, doc="count the input embedding as one layer of the first stage")
    loss_in_pipeline_split: bool = f(False, doc="count the output layer and loss as one layer of the last stage")
    tp_comm_overlap: bool | None = f(None, doc="tensor-parallel communication pipelined with the GEMMs "
                                     "(Megatron --tp-comm-overlap; needs sequence parallelism and the "
                                     "tensor-parallel group inside one NVLink domain)")
    overlap_grad_reduce: bool | None = f(None, doc="reduce gradients during the last backward (framework default)")
    overlap_param_gather: bool | None = f(None, doc="gather parameters during the first forward (framework default)")
    overlap_p2p_comm: bool | None = f(None, doc="interleaved pipeline schedule: each chunk's send and receive run "
                                      "behind the next chunk of the other direction in the steady state "
                                      "(Megatron-Core overlap_p2p_comm; read only with virtual stages and on a "
                                      "framework with that schedule option, Megatron-LM and NeMo: elsewhere it is "
                                      "ignored with a warning); default: the framework's (NeMo: true; megatron: "
                                      "false, as Narayanan 2021's runs predate the option, although Megatron-LM has "
                                      "turned it on with virtual stages since 2023: set true for a later run; "
                                      "DeepSpeed, FSDP, TorchTitan: no such option)")


_PEAK = {"gt": 0, "le": 1, "what": "a fraction of the datasheet peak"}
_HIDDEN = {"ge": 0, "le": 1, "what": "the fraction of the communication hidden behind compute"}
_BYTES = {"ge": 0, "le": 1000, "unit": "bytes"}
#: The range of each training-engine efficiency parameter a scenario may override
#: (``training.efficiency``; meanings and defaults in data/efficiency.yaml, the names are the fields
#: of :class:`gpucluster_lib.training.efficiency.Efficiency`). Fractions of a datasheet peak (FLOP/s,
#: HBM, NVLink, NIC line rate) are in (0, 1]: 0 would make that work take forever. Hidden (overlapped)
#: fractions are in [0, 1]: above 1 the exposed communication time would be negative.
TRAINING_EFFICIENCY_RULES: dict[str, dict[str, Any]] = {
    "gemm_efficiency": _PEAK,
    "fp8_gemm_factor": {"gt": 0, "le": 1, "what": "the share of the 16-bit matrix-multiply efficiency kept "
                                                  "against the FP8 peak"},
    "memory_efficiency": _PEAK, "flash_attention_efficiency": _PEAK,
    "attention_half_rate_tokens": {"ge": 0, "le": 16_777_216, "unit": "tokens"},
    "nvlink_efficiency": _PEAK, "network_efficiency": _PEAK,
    "layer_overhead_s": {"ge": 0, "le": 1, "unit": "s"},
    "unfused_attention_bytes_per_score": _BYTES, "elementwise_bytes_per_hidden": _BYTES,
    "activation_bytes_per_ffn_gelu": _BYTES, "activation_bytes_per_ffn_swiglu": _BYTES,
    "cross_entropy_bytes_per_logit": _BYTES, "optimizer_bytes_per_param": _BYTES,
    "flash_backward_factor": {"gt": 0, "le": 100, "what": "the attention backward's cost over its forward"},
    "alpha_nvlink_s": {"ge": 0, "le": 1, "unit": "s"}, "alpha_network_s": {"ge": 0, "le": 1, "unit": "s"},
    "zero3_overlap": _HIDDEN, "cp_overlap": _HIDDEN, "ep_overlap": _HIDDEN, "dp_overlap": _HIDDEN,
    "tp_overlap": _HIDDEN,
    "step_overhead": {"ge": 0, "le": 1, "what": "a fraction of the step time"},
    "cuda_context_gib": {"ge": 0, "le": 1024, "unit": "GiB"}, "comm_buffers_gib": {"ge": 0, "le": 1024, "unit": "GiB"},
    "fragmentation": {"ge": 0, "le": 1, "what": "a fraction of the memory held"},
}


@dataclass(frozen=True)
class TrainingSpec:
    tokens: float | None = f(None, gt=0, le=1e16, unit="tokens")
    precision: Literal["bf16", "fp16", "fp8", "tf32", "fp32"] = f("bf16")
    deadline_days: float | None = f(None, gt=0, le=36_500, unit="days")
    epochs: float | None = f(None, gt=0, le=100_000, doc="for CNN/ViT workloads")
    dataset_images: float | None = f(None, gt=0, le=1e12, doc="images per epoch (CNN/ViT)")
    gemm_efficiency: float | None = f(None, gt=0, le=1, doc="override of the achievable fraction of peak")
    flash_attention: bool = f(True, doc="fused (FlashAttention-style) attention; false = s x s scores in memory")
    attention_kernel: Literal["flash-attention-2", "pytorch-flash-attention", "triton", "cudnn"] | None = f(
        None, doc="the fused attention kernel and its speed (data/efficiency.yaml): flash-attention-2 "
                  "(FlashAttention-2, flash-attn's own kernel), pytorch-flash-attention (PyTorch SDPA's copy of "
                  "FlashAttention-2), triton (llm-foundry's Triton FlashAttention, attn_impl: triton) or cudnn "
                  "(cuDNN fused attention, which Transformer Engine selects on Hopper and Blackwell; NVIDIA GPUs "
                  "only); default: the "
                  "framework's for the GPU generation (Megatron-LM, NeMo: cudnn on Hopper and Blackwell, "
                  "flash-attention-2 on Ampere and for heads cuDNN does not train on Blackwell; TorchTitan: "
                  "pytorch-flash-attention on Ampere and Hopper, cudnn on Blackwell; otherwise flash-attention-2)")
    transformer_engine: str | None = f(
        None, max_len=11, release=True,
        doc="the Transformer Engine release of the run, in quotes, e.g. '1.14' (data/training_frameworks.yaml "
            "transformer_engine): before 2.0 FP8 training on Blackwell keeps a transposed copy of every FP8 tensor as "
            "on Hopper; the MXFP8 recipe needs 2.0, current scaling and the Triton cross-entropy 2.2; NVIDIA's "
            "release numbers; not read by TorchTitan's torchao float8; default: a recent release (2.2 or later)")
    fp8_recipe: Literal["delayed", "current", "mxfp8"] | None = f(
        None, doc="FP8 scaling recipe, read with precision fp8 (data/training_frameworks.yaml fp8_recipes): delayed "
                  "(Transformer Engine's DelayedScaling: scales from the amax history, casts fused into the norm "
                  "where the framework lets the norm write the FP8 input), current (per-tensor current scaling: "
                  "a separate amax pass before each cast, +2 bytes per element, no norm fusion) or mxfp8 (MXFP8 "
                  "block scaling, Blackwell only); default: the framework's (Megatron-LM, NeMo, FSDP, DeepSpeed: "
                  "delayed; TorchTitan: current)")
    efficiency: dict[str, float] = f({}, keys=TRAINING_EFFICIENCY_RULES, max_items=64,
                                     doc="overrides of data/efficiency.yaml parameters by name (fractions of "
                                         "peak: 0 < x <= 1; hidden fractions: 0 <= x <= 1)")
    framework: Literal["megatron", "deepspeed", "fsdp", "nemo", "torchtitan"] = f(
        "megatron", doc="training software: its pipeline, overlap and reduction terms (data/training_frameworks.yaml)")
    checkpoint_early_stop: bool | None = f(
        None, doc="full activation checkpointing stops recomputing a layer once every tensor its backward needs is "
                  "back, so the layer's last projection (the FFN output) is not rerun (PyTorch 2.1 and later, "
                  "non-reentrant checkpoint); default: the framework's (FSDP, TorchTitan: true; Megatron-LM, "
                  "NeMo, DeepSpeed: false)")
    cross_entropy_loss: Literal["megatron_unfused", "megatron_fused", "flash_attn_xentropy",
                                "torch_compile", "te_triton"] | None = f(
        None, doc="the cross-entropy implementation over the vocabulary (its memory traffic per logit, counted from "
                  "its kernels: data/training_frameworks.yaml cross_entropy_losses): megatron_unfused (Megatron's "
                  "vocab-parallel loss in eager PyTorch, 52 bytes), megatron_fused (Megatron-Core "
                  "cross_entropy_loss_fusion, torch.compile'd, 40), flash_attn_xentropy (flash-attn 1.x "
                  "CrossEntropyLoss, 8), torch_compile (F.cross_entropy under torch.compile, 8), te_triton (Transformer Engine's Triton kernel, 10); default: the "
                  "framework's (Megatron-LM, DeepSpeed: megatron_unfused; NeMo: megatron_fused; FSDP "
                  "(llm-foundry): flash_attn_xentropy; TorchTitan: torch_compile)")
    param_gather_precision: Literal["fp32", "bf16", "fp16"] | None = f(
        None, doc="precision of the ZeRO-3 / FSDP parameter all-gathers and of the gathered parameters held in "
                  "memory (not read below ZeRO-3: a warning); default: the framework's (16-bit; "
                  "Composer's DEFAULT mixed precision before version 0.14 gathers fp32)")
    grad_reduce_precision: Literal["fp32", "bf16", "fp16"] | None = f(
        None, doc="precision of the data-parallel gradient reduction (the ZeRO-3 / FSDP reduce-scatter "
                  "included); default: the framework's (FSDP: fp32 as Composer's DEFAULT from version 0.16.4; "
                  "PURE: bf16)")
    optimizer_state_precision: Literal["fp32", "bf16"] | None = f(
        None, doc="precision of Adam's two moments (NeMo's distributed_fused_adam with optim.dtype bf16, "
                  "Megatron-Core's precision-aware optimizer): 4 or 2 bytes each per parameter; default fp32")
    master_weights: Literal["fp32", "bf16", "remainders", "none"] | None = f(
        None, doc="the optimizer's copy of the weights: fp32 (4 bytes per parameter), bf16 (2), remainders (2: "
                  "Apex DistributedFusedAdam's store_param_remainders, the 16 low bits of the fp32 value beside "
                  "the bf16 weight; NeMo 1.x with a bf16 model and an fp32 optimizer) or none (a bf16 optimizer "
                  "updating bf16 weights); default fp32")
    distribute_saved_activations: bool = f(
        False, doc="under full recomputation without sequence parallelism, each layer's saved input is split over "
                   "the tensor-parallel ranks (Megatron-LM --distribute-saved-activations, metaseq "
                   "--distribute-checkpointed-activations) instead of held whole on each; read only with full "
                   "recomputation, tensor parallelism and no sequence parallelism, else a warning")
    fp8_params: bool | None = f(
        None, doc="FP8 primary weights (Megatron-Core --fp8-param-gather, NeMo fp8_params / fp8_param_gather): "
                  "in FP8 training the one-byte weight and its transpose replace the 16-bit weight instead of "
                  "being kept beside it (Transformer Engine's weight workspace, two bytes per weight element "
                  "of the layers), and the data-parallel parameter all-gathers move those weights in one byte "
                  "(NeMo's ZeRO-3, Megatron-FSDP, gathers 16 bits whatever the setting, as NeMo 25.04's performance "
                  "scripts turn fp8_param_gather off under FSDP; set, it gets a warning there); "
                  "read only by the frameworks with an FP8-weight path (Megatron-LM, NeMo; TorchTitan, whose "
                  "torchao float8 all-gather of FSDP2 weights it stands for), else a warning; default: the "
                  "framework's (NeMo true, as its FP8 recipes; the others false)")
    defer_output_wgrad: bool | None = f(
        None, doc="the last pipeline stage defers the output layer's weight-gradient GEMMs of the first "
                  "wgrad_deferral_limit micro-batches to the pipeline flush, where they run while the other stages "
                  "finish their backwards (Megatron-Core defer_embedding_wgrad_compute, NeMo / Megatron-Bridge "
                  "CommOverlapConfig); read only with pipeline parallelism and a framework with the deferral path "
                  "(Megatron-LM, NeMo), else a warning; default: the framework's (off)")
    wgrad_deferral_limit: int | None = f(
        None, ge=0, le=1_000_000, unit="micro-batches",
        doc="with defer_output_wgrad: how many micro-batches of a step have their output-layer weight gradient "
            "deferred, 0 = all (Megatron-Core wgrad_deferral_limit; NeMo's recipes use 22 or 50); default: the "
            "framework's (0)")
    zero3_max_live_parameters: float | None = f(
        None, gt=0, le=1e15, unit="parameters",
        doc="DeepSpeed ZeRO-3's stage3_max_live_parameters: no parameter prefetch is issued while this many "
            "parameter elements are gathered, so the gather after a weight of at least this size is not "
            "hidden behind compute, and more gathered weights are held the higher it is (read only with ZeRO-3 "
            "and the deepspeed framework, else a warning); default: the framework's (DeepSpeed: 1e9)")


@dataclass(frozen=True)
class InferenceSpec:
    precision: Literal["bf16", "fp16", "fp8", "int8", "int4"] = f("bf16")
    tensor_parallel: int | None = f(None, gt=0, le=1024)
    input_tokens: int = f(1024, gt=0, le=16_777_216, unit="tokens")
    output_tokens: int = f(256, gt=0, le=16_777_216, unit="tokens")
    requests_per_s: float | None = f(None, gt=0, le=1e8, unit="1/s")
    tokens_per_s: float | None = f(None, gt=0, le=1e10, unit="tokens/s", doc="target in output (generated) tokens/s")
    ttft_slo_s: float = f(2.0, gt=0, le=1e7, unit="s")
    tpot_slo_s: float = f(0.2, gt=0, le=1e7, unit="s")
    arrival: Literal["offline", "poisson"] = f("offline", doc="offline: saturated batches (MLPerf Offline); poisson: "
                                                        "random arrivals queue (MLPerf Server), SLOs at slo_percentile")
    slo_percentile: float = f(99.0, ge=50, lt=100, unit="%", doc="percentile of TTFT and TPOT the SLOs bind "
                                                                 "with poisson arrivals, the median or above "
                                                                 "(MLPerf: 99)")
    output_tokens_cv: float = f(0.0, ge=0, le=10, doc="spread of output lengths: standard deviation over the mean "
                                                     "(0: every request generates output_tokens; MLPerf Llama 2 70B: 0.71)")
    batch_size: int | None = f(None, gt=0, le=1_000_000, doc="fixed batch (sequences or images); searched when absent")
    kv_cache_scheduling: Literal["no_evict", "max_utilization"] = f(
        "no_evict", doc="no_evict: each sequence reserves KV for its full length; max_utilization: pages on demand, "
                        "the cache holds the mean context in flight (TensorRT-LLM capacity policies)")
    max_num_tokens: int | None = f(None, gt=0, le=16_777_216, unit="tokens",
                                   doc="engine token budget per step (prefill and decode tokens), at least the "
                                       f"input tokens; default {DEFAULT_MAX_NUM_TOKENS}, or the input tokens "
                                       "when a prompt is longer")
    engine: Literal["generic", "tensorrt-llm"] = f(
        "generic", doc="serving engine profile: generic (no engine terms) or tensorrt-llm (TensorRT-LLM 0.10 and "
                       "0.11 in-flight batching, fitted on its own throughput tables: host time per iteration, "
                       "FP8 matrix-multiply efficiency, a token budget that counts decode tokens)")
    streaming: bool = f(False, doc="responses returned token by token as they are generated (streamed), not whole "
                                   "at the end; the tensorrt-llm engine charges its host time per streamed sequence")
    images_per_s: float | None = f(None, gt=0, le=1e9)
    video_streams: int | None = f(None, gt=0, le=1_000_000)
    video_fps: float | None = f(None, gt=0, le=1000)
    kv_cache_precision: Literal["bf16", "fp16", "fp8", "int8"] | None = f(
        None, doc="KV cache storage; defaults to fp8 for fp8, int8 for int8, else bf16")
    # serving efficiency overrides (defaults and sources: gpucluster_lib/inference/efficiency.py)
    gemm_efficiency_16bit: float | None = f(None, gt=0, le=1, doc="achieved fraction of dense BF16/FP16 peak")
    gemm_efficiency_8bit: float | None = f(None, gt=0, le=1, doc="achieved fraction of dense FP8/INT8 peak")
    memory_bandwidth_efficiency: float | None = f(None, gt=0, le=1, doc="achieved fraction of HBM bandwidth")
    decode_step_overhead_s: float | None = f(None, ge=0, le=10, unit="s", doc="fixed cost per decode iteration")
    allreduce_latency_s: float | None = f(None, ge=0, le=1, unit="s", doc="fixed cost of one TP all-reduce")
    link_bandwidth_efficiency: float | None = f(None, gt=0, le=1, doc="achieved fraction of NVLink bandwidth")
    memory_utilization: float | None = f(None, gt=0, le=1, doc="fraction of HBM the engine may use")
    runtime_overhead_gib: float | None = f(None, ge=0, le=1024, unit="GiB", doc="CUDA context and buffers outside the pool")
    vision_efficiency: float | None = f(None, gt=0, le=1, doc="achieved fraction of peak for CNN/ViT inference")
    mig_profile: str | None = f(None, max_len=32, doc="serve each replica on a MIG instance of this profile (A100/H100/H200, "
                                "e.g. 1g.10gb), or 'auto' for the profile that needs the fewest GPUs")


@dataclass(frozen=True)
class FacilitySpec:
    rack_units: int = f(42, ge=1, le=60, unit="U")
    rack_power_limit_kw: float | None = f(None, gt=0, le=1000, unit="kW",
                                          doc="power a rack's feeds deliver; default 40, or the vendor's reference "
                                              "rack (DGX H100: 4 x 10.2 kW) when no rack limit is given")
    rack_weight_limit_kg: float = f(1360.0, gt=0, le=10_000, unit="kg")
    cooling: Literal["air", "rear_door", "liquid"] = f("air")
    pue: float = f(1.3, ge=1.0, le=4.0)
    energy_price_per_kwh: float = f(0.10, ge=0, le=100, unit="currency/kWh")
    delta_t_c: float = f(11.1, gt=0, le=40, unit="K")
    power_redundancy: Literal["N", "N+1", "2N"] = f("N+1")
    grid_kg_co2e_per_kwh: float | None = f(None, ge=0, le=5, unit="kg CO2e/kWh")
    grid_region: str | None = f(None, max_len=64, doc="preset grid intensity region")
    growth_headroom: float = f(0.2, ge=0, le=5, doc="fraction of extra capacity to plan for")
    rack_cooling_limit_kw: float | None = f(None, gt=0, le=1000, unit="kW",
                                            doc="heat a rack's cooling removes; default by cooling type (air 30, "
                                                "rear_door 50, liquid 120)")
    reserved_rack_units: int = f(2, ge=0, le=20, unit="U", doc="per compute rack: management switch, patch panel")
    racks_per_row: int = f(10, gt=0, le=60)
    cdu: Literal["in-row", "in-rack"] = f("in-row", doc="coolant distribution units of direct liquid cooling: "
                                          "one unit feeding a row of racks, or one in each rack")
    cdu_capacity_kw: float | None = f(None, gt=0, le=100_000, unit="kW", doc="heat one CDU exchanges (default in-row 1000, "
                                      "in-rack 100)")
    coolant_delta_t_c: float = f(10.0, gt=0, le=40, unit="K", doc="supply/return rise of the cold-plate loop")
    facility_water_delta_t_c: float = f(10.0, gt=0, le=40, unit="K", doc="supply/return rise of the facility water")
    storage_power_kw: float | None = f(None, ge=0, le=1_000_000, unit="kW",
                                       doc="IT power of shared storage; default: the appliances gpucluster_lib.facility.storage sizes for checkpoint I/O")


@dataclass(frozen=True)
class CostsSpec:
    years: int = f(4, gt=0, le=20)
    currency: str = f("USD", max_len=16)
    accelerator_price: float | None = f(None, ge=0, le=1e9, doc="override, per accelerator")
    server_price: float | None = f(None, ge=0, le=1e10, doc="override, per node")
    maintenance_fraction: float = f(0.08, ge=0, le=1, doc="of CapEx per year")
    colocation_per_kw_month: float | None = f(None, ge=0, le=1e6)
    facility_per_kw: float | None = f(None, ge=0, le=1e8, doc="build cost per kW of IT")
    rent_per_gpu_hour: float | None = f(None, ge=0, le=1e5, unit="currency/GPU-h", doc="rental price; default "
                                        "data/rent_prices.yaml for the accelerator and costs.rent_term")
    purchase: Literal["buy", "rent"] = f("buy", doc="buy the hardware, or rent it as cloud capacity (TPUs: rent only)")
    rent_term: Literal["on-demand", "reserved"] = f("on-demand", doc="rented capacity: paid per hour used, or a "
                                                    "reserved term paid for every hour")
    prices: dict[str, float] = f({}, ge=0, le=1e12, max_items=256, doc="catalogue id -> price override")
    facility_model: Literal["build", "colocation"] = f("build", doc="own the building (CapEx per kW) or rent "
                                                       "colocation space (OpEx per kW-month)")
    facility_life_years: float | None = f(None, gt=0, le=50, unit="years",
                                          doc="straight-line depreciation of the building (default 15)")
    load_fraction: float = f(1.0, gt=0, le=1, doc="average IT load as a fraction of the budgeted IT power")
    rack_price: float | None = f(None, ge=0, le=1e8, doc="per rack with its PDUs")
    head_node_price: float | None = f(None, ge=0, le=1e9, doc="per management / head node")
    storage_per_tb: float | None = f(None, ge=0, le=1e7, doc="per usable TB when the storage system has no price")
    network_price: float | None = f(None, ge=0, le=1e13, doc="override of the whole network CapEx")


@dataclass(frozen=True)
class ReliabilitySpec:
    gpu_failures_per_1000_gpu_days: float | None = f(None, ge=0, le=1000)
    component_rates: dict[str, float] = f({}, ge=0, le=1000, max_items=64, doc="component -> failures per 1000 GPU-days")
    checkpoint_write_gbps: float | None = f(None, gt=0, ge=0.001, le=100_000, unit="GB/s")
    restart_minutes: float | None = f(None, ge=0, le=10_080, unit="min")
    spare_nodes: int | None = f(None, ge=0, le=100_000)
    redundant_head_node: bool = f(True)
    failure_preset: Literal["llama3-405b", "rsc1", "rsc2"] = f(
        "llama3-405b", doc="default failure rates: Llama 3 405B Table 5, Meta RSC-1 or RSC-2 (data/failure_rates.yaml)")
    repair_hours: float | None = f(None, gt=0, le=8760, unit="h", doc="time to repair a failed node (sizes hot spares)")
    checkpoint_bytes_per_param: float | None = f(None, gt=0, le=64, unit="B",
                                                 doc="checkpoint bytes per parameter (default 14: bf16 "
                                                     "weights + fp32 master + Adam m, v)")
    checkpoint_interval_s: float | None = f(None, gt=0, le=3.2e7, unit="s", doc="override of the optimal (Daly) interval")
    storage_system: str | None = f(None, max_len=64, doc="storage.csv id of the checkpoint file system (default ddn-ai400x2)")
    storage_units: int | None = f(None, gt=0, le=10_000, doc="appliances of storage_system (default: sized by checkpoint_target_s)")
    checkpoint_target_s: float = f(60.0, ge=1, le=86_400, unit="s", doc="checkpoint write time the storage is sized for")
    checkpoints_kept: int = f(3, ge=1, le=1000, doc="checkpoints kept on the file system (sizes capacity)")
    failure_rate_range: list[float] = f([0.6, 1.75], ge=0, le=100, doc="low, high multipliers of the failure rate (P10-P90 band)")
    efficiency_range: list[float] = f([0.75, 1.1], ge=0, le=10, doc="low, high multipliers of the training throughput")
    spare_confidence: float = f(0.99, gt=0, lt=1, doc="probability that the spares cover the nodes in repair")


@dataclass(frozen=True)
class OperationsSpec:
    """Software stack, scheduler, monitoring, security and data management (gpucluster_lib.operations)."""

    os_image: Literal["ubuntu-22.04", "ubuntu-24.04", "rocky-9", "rhel-9", "dgx-os-6"] = f(
        "ubuntu-22.04", doc="operating system image of every node")
    cluster_manager: Literal["base-command-manager", "warewulf", "xcat", "maas", "none"] = f(
        "base-command-manager", doc="provisioning and cluster management software on the head nodes")
    scheduler: Literal["slurm", "kubernetes", "both"] = f("slurm", doc="SLURM for queued jobs, Kubernetes "
                                                           "for services, or both")
    login_nodes: int | None = f(None, ge=0, le=1000, doc="dedicated login nodes among the head nodes (default: none "
                                "below 32 nodes, else 2 with a redundant head node or 1, plus one per 128 nodes above 128)")
    gpu_driver: str = f("550.127.08", doc="NVIDIA data-center driver version")
    cuda: str = f("12.4", doc="CUDA toolkit version of the node image")
    nccl: str = f("2.21.5", doc="NCCL version of the node image")
    container_runtime: Literal["enroot-pyxis", "apptainer", "containerd", "docker"] | None = f(
        None, doc="default: enroot with pyxis under SLURM, containerd under Kubernetes")
    gpu_operator: bool | None = f(None, doc="NVIDIA GPU operator (default: with Kubernetes)")
    network_operator: bool | None = f(None, doc="NVIDIA network operator for RDMA (default: with Kubernetes)")
    scrape_interval_s: float = f(15.0, gt=0, le=86_400, unit="s", doc="Prometheus scrape interval of every exporter")
    retention_days: float = f(15.0, gt=0, le=36_500, unit="days", doc="Prometheus retention (its default: 15 days)")
    bytes_per_sample: float = f(2.0, gt=0, le=1024, unit="B", doc="Prometheus disk per sample (its storage docs: 1-2 B)")
    node_exporter_series: int = f(1000, ge=0, le=10_000_000, doc="series the node exporter exposes per host")
    serving_spare_replicas: int = f(1, ge=0, le=10_000, doc="serving replicas beyond the demand, so a failed replica "
                                    "leaves the demand served (1 = N+1)")
    fairshare_weight: int = f(10000, ge=0, le=4_294_967_295, doc="SLURM PriorityWeightFairshare of the training queue")
    priority_decay_half_life_days: float = f(7.0, gt=0, le=3650, unit="days", doc="SLURM PriorityDecayHalfLife "
                                             "(its default: 7 days)")
    dataset_tb: float | None = f(None, gt=0, le=1e7, unit="TB", doc="training data set on disk (default: from "
                                 "training.tokens or training.dataset_images)")
    dataset_versions: int = f(2, ge=1, le=1000, doc="versions of the data set kept on the capacity tier")
    checkpoint_retention_days: float = f(30.0, gt=0, le=36_500, unit="days", doc="one checkpoint a day kept on the "
                                         "capacity tier for this long")
    backup: Literal["none", "snapshot", "offsite"] = f("offsite", doc="backup of data sets and kept checkpoints")


@dataclass(frozen=True)
class StorageSpec:
    """Shared storage for data: the data set, checkpoints, read and write bandwidth, two tiers."""

    performance_class: Literal["good", "better", "best"] = f(
        "better", doc="NVIDIA DGX SuperPOD storage guidance class that sets the read and write bandwidth per GPU")
    read_gb_per_s_per_gpu: float | None = f(None, ge=0, le=1000, unit="GB/s", doc="override of the class's read bandwidth per GPU")
    write_gb_per_s_per_gpu: float | None = f(None, ge=0, le=1000, unit="GB/s", doc="override of the class's write bandwidth per GPU")
    dataset_tokens: float | None = f(None, gt=0, le=1e18, unit="tokens", doc="tokens in the data set (default training.tokens)")
    bytes_per_token: float | None = f(None, gt=0, le=1024, unit="B", doc="stored bytes per tokenised token (default from the "
                                      "vocabulary: 2 B up to 65,536 entries, else 4 B)")
    raw_bytes_per_token: float = f(4.0, ge=0, le=1024, unit="B", doc="raw text bytes per token (about 4 characters a token)")
    raw_data_multiple: float = f(10.0, ge=0, le=10_000, doc="raw source data kept per byte of filtered text (web filtering "
                                 "keeps about a tenth)")
    bytes_per_image: float = f(110e3, gt=0, le=1e12, unit="B", doc="stored bytes per training image (ImageNet-1k JPEG average)")
    checkpoints_archived: int = f(10, ge=0, le=100_000, doc="checkpoints kept on the capacity tier")
    growth_factor: float = f(2.0, ge=1, le=20, doc="capacity planned per byte needed today")
    capacity_system: str | None = f(None, max_len=64, doc="storage.csv id of the capacity tier (default generic-hdd-object-4u)")
    capacity_tier: bool = f(True, doc="a capacity tier for raw data and archived checkpoints beside the fast tier")


@dataclass(frozen=True)
class Scenario:
    name: str = f("untitled", max_len=200)
    description: str = f("", max_len=4000)
    catalog: list[str] = f([], max_items=16, max_len=500, doc="extra catalogue CSV paths, relative to the scenario "
                           "file and inside its folder (others need --allow-paths; an upload names none)")
    calibration: str | None = f(None, max_len=500, doc="calibration profile YAML written by 'gpucluster calibrate' (measured "
                                          "GEMM curves and link bandwidths), relative to the scenario file, or the name "
                                          "of a shipped example profile (example-h100-public-data); the training and "
                                          "serving estimates take its GEMM level and links (docs/calibration.md)")
    model: ModelSpec = sub(ModelSpec)
    hardware: HardwareSpec = sub(HardwareSpec)
    network: NetworkSpec = sub(NetworkSpec)
    parallelism: ParallelismSpec = sub(ParallelismSpec)
    training: TrainingSpec = sub(TrainingSpec)
    inference: InferenceSpec = sub(InferenceSpec)
    facility: FacilitySpec = sub(FacilitySpec)
    costs: CostsSpec = sub(CostsSpec)
    reliability: ReliabilitySpec = sub(ReliabilitySpec)
    operations: OperationsSpec = sub(OperationsSpec)
    storage: StorageSpec = sub(StorageSpec)
    #: folder of the YAML file (to resolve relative paths); not a user key.
    base_dir: Path | None = field(default=None, compare=False, repr=False, metadata={"internal": True})
    #: which ``catalog`` paths may be read: "any" (Python callers, ``--allow-paths``), "inside"
    #: (relative paths inside base_dir: scenario files), "none" (uploads); not a user key.
    path_policy: str = field(default="any", compare=False, repr=False, metadata={"internal": True})

    # -- conveniences ------------------------------------------------------
    def replace(self, **changes: Any) -> Scenario:
        """A copy with top-level sections or ``section__field`` values replaced and re-validated."""
        data = to_dict(self)
        for key, value in changes.items():
            if "__" in key:
                section, name = key.split("__", 1)
                data.setdefault(section, {})[name] = value
            else:
                data[key] = to_dict(value) if dataclasses.is_dataclass(value) else value
        return from_dict(data, base_dir=self.base_dir, path_policy=self.path_policy)

# --------------------------------------------------------------------------- building


_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _describe(tp: Any) -> str:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return " or ".join(_describe(a) for a in args) + (" (optional)" if len(args) < len(get_args(tp)) else "")
    if tp in _TYPE_WORDS:
        return _TYPE_WORDS[tp]
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in get_args(tp))
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    if get_origin(tp) in (list, typing.List):  # noqa: UP006
        return "a list"
    if get_origin(tp) in (dict, typing.Dict):  # noqa: UP006
        return "a mapping"
    return str(tp)


def _given(value: Any) -> str:
    """What the file holds, for a "must be ..., got ..." message: a YAML boolean or null in words
    (``true (a true/false value)``, ``null (no value)``), else :func:`excerpt` of it."""
    if isinstance(value, bool):
        return f"{'true' if value else 'false'} (a true/false value)"
    if value is None:
        return "null (no value)"
    return excerpt(value)


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a mapping", type(None): "nothing (null)"}.get(type(value), type(value).__name__)


#: Longest text a string field takes unless its metadata says ``max_len`` [characters].
MAX_TEXT_CHARS = 200
#: Most items a list or mapping field takes unless its metadata says ``max_items``.
MAX_ITEMS = 64


def _coerce(tp: Any, value: Any, path: str) -> Any:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if value is None:
            return None
        errors = []
        for a in args:
            try:
                return _coerce(a, value, path)
            except ScenarioError as e:
                errors.append(e)
        raise errors[0]
    if origin is Literal:
        choices = get_args(tp)
        if not isinstance(value, (str, int, float, bool)) or value not in choices:
            close = difflib.get_close_matches(value, [str(c) for c in choices], n=1) \
                if isinstance(value, str) and len(value) <= 64 else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""  # quoted as the unknown-key hints
            raise ScenarioError(path, f"must be one of {one_of(choices)}, not {yaml_value(value)}{hint}")
        return value
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    if origin is list:
        (item,) = get_args(tp)
        if not isinstance(value, list):
            raise ScenarioError(path, f"must be a list, got {_type_name(value)}")
        if len(value) > MAX_ITEMS * 4:
            raise ScenarioError(path, f"must have at most {MAX_ITEMS * 4} items, got {len(value):,}")
        return [_coerce(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        kt, vt = get_args(tp)
        if not isinstance(value, dict):
            raise ScenarioError(path, f"must be a mapping, got {_type_name(value)}")
        if len(value) > MAX_ITEMS * 4:
            raise ScenarioError(path, f"must have at most {MAX_ITEMS * 4} entries, got {len(value):,}")
        out = {}
        for k, v in value.items():
            key = _coerce(kt, k, f"{path}.{excerpt(k, 40) if not isinstance(k, str) else k[:40]}")
            out[key] = _coerce(vt, v, f"{path}.{key[:40]}")
        return out
    if tp is bool:
        if not isinstance(value, bool):
            raise ScenarioError(path, f"must be true or false, got {_given(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            hint = ": write it without a decimal point" if isinstance(value, float) and value.is_integer() \
                and abs(value) < 1e15 else ""
            raise ScenarioError(path, f"must be an integer, got {_given(value)}{hint}")
        return value
    if tp is float:
        if isinstance(value, str):
            try:  # a quoted number ("3.0e+11")
                number = float(value) if len(value) <= 64 else None
            except ValueError:
                number = None
            if number is None:
                raise ScenarioError(path, f"must be a number, got {excerpt(value)}") from None
            value = number
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScenarioError(path, f"must be a number, got {_given(value)}")
        try:
            value = float(value)
        except OverflowError:
            raise ScenarioError(path, f"must be a finite number, got {excerpt(value)}") from None
        if not math.isfinite(value):
            raise ScenarioError(path, f"must be a finite number, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return str(value) if not isinstance(value, int) or value.bit_length() < 200 else excerpt(value)
            raise ScenarioError(path, f"must be a string, got {_type_name(value)}")
        return value
    return value


def _check_rules(fld: dataclasses.Field, value: Any, path: str) -> None:
    """The field's bounds (``gt``, ``ge``, ``le``, ``lt``, ``max_len``, ``max_items``), on each
    item of a list or mapping field."""
    md = fld.metadata
    if isinstance(value, (list, dict)):
        limit = md.get("max_items", MAX_ITEMS)
        if len(value) > limit:
            raise ScenarioError(path, f"must have at most {limit} item{'s' if limit != 1 else ''}, "
                                      f"got {len(value):,}")
        if isinstance(value, dict) and "keys" in md:  # a rule per key (TRAINING_EFFICIENCY_RULES)
            for k, v in value.items():
                _check_keyed(md["keys"], k, v, f"{path}.{k}")
            return
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            _check_value(md, v, f"{path}.{k}" if isinstance(value, dict) else f"{path}[{k}]")
        return
    _check_value(md, value, path)


def _bound(v: float) -> str:
    """A range bound or value in words: whole numbers with thousands separators and no ".0" (16,777,216, 0),
    powers of ten from 10^12 (10^15), others as written (0.5) (:func:`~gpucluster_lib.formatting.number_words`)."""
    return number_words(v)


def _check_keyed(rules: dict[str, dict[str, Any]], key: str, value: Any, path: str) -> None:
    """One entry of a mapping whose keys each have their own range: an unknown key or a value
    out of its range is refused with the range in words."""
    if key not in rules:
        close = difflib.get_close_matches(key, list(rules), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"valid: {', '.join(rules)}"
        raise ScenarioError(path, f"unknown efficiency parameter; {hint}")
    md = rules[key]
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if ("gt" in md and not value > md["gt"]) or ("ge" in md and not value >= md["ge"]) \
            or ("le" in md and not value <= md["le"]) or ("lt" in md and not value < md["lt"]):
        low = f"greater than {_bound(md['gt'])}" if "gt" in md else f"at least {_bound(md['ge'])}"
        high = f"at most {_bound(md['le'])}" if "le" in md else f"less than {_bound(md['lt'])}"
        span = f"from {_bound(md['ge'])} to {_bound(md['le'])}" if "ge" in md and "le" in md else f"{low} and {high}"
        unit = f" {md['unit']}" if md.get("unit") else ""
        what = f" ({md['what']})" if md.get("what") else ""
        raise ScenarioError(path, f"must be {span}{unit}{what}, got {_bound(value)}")


def _check_value(md: Any, value: Any, path: str) -> None:
    if isinstance(value, str):
        limit = md.get("max_len", MAX_TEXT_CHARS)
        if len(value) > limit:
            raise ScenarioError(path, f"must be at most {limit:,} characters, got {len(value):,}")
        if md.get("release") and not re.fullmatch(r"[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,3})?", value):
            raise ScenarioError(path, f"must be a release number such as '1.14' or '2.2', got {excerpt(value)}")
        return
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    unit = f" {md['unit']}" if md.get("unit") else ""
    shown = _bound(value)
    if "gt" in md and not value > md["gt"]:
        if md["gt"] == 0:
            what = "a positive integer" if isinstance(value, int) else "a positive number"
            raise ScenarioError(path, f"must be {what}, got {shown}")
        raise ScenarioError(path, f"must be greater than {_bound(md['gt'])}{unit}, got {shown}")
    if "ge" in md and not value >= md["ge"]:
        raise ScenarioError(path, f"must be at least {_bound(md['ge'])}{unit}, got {shown}")
    if "le" in md and not value <= md["le"]:
        raise ScenarioError(path, f"must be at most {_bound(md['le'])}{unit}, got {shown}")
    if "lt" in md and not value < md["lt"]:
        raise ScenarioError(path, f"must be less than {_bound(md['lt'])}{unit}, got {shown}")


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints`` of a scenario dataclass, resolved once (about 1 ms each)."""
    return typing.get_type_hints(cls)


@typing.no_type_check
def _build(cls: type, data: Any, path: str) -> Any:
    if data is None:
        data = {}
    if cls is ParallelismSpec and data == "auto":
        data = {"auto": True}
    if cls is ModelSpec and isinstance(data, str):
        data = {"preset": data}
    if cls is CountSpec and isinstance(data, str):
        data = {"id": data}
    if not isinstance(data, dict):
        raise ScenarioError(path or "scenario", f"must be a mapping of keys to values, got {_type_name(data)}")
    hints = _type_hints(cls)
    fields = {fl.name: fl for fl in dataclasses.fields(cls) if not fl.metadata.get("internal")}
    for key in data:
        if key not in fields:
            name = key[:40] if isinstance(key, str) else excerpt(key, 40)
            close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6) \
                if isinstance(key, str) and len(key) <= 64 else []
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(fields)}"
            raise ScenarioError(f"{path}.{name}" if path else name, f"unknown key{hint}")
    kwargs = {}
    for name, fl in fields.items():
        if name in data:
            sub_path = f"{path}.{name}" if path else name
            if fl.metadata.get("release") and isinstance(data[name], (int, float)) and not isinstance(data[name], bool):
                # YAML reads 2.10 as the number 2.1: a software release is text
                raise ScenarioError(sub_path, "write the release in quotes, e.g. '1.14' or '2.10', so that it is read "
                                              f"as written (a number loses trailing zeros), got {_given(data[name])}")
            value = _coerce(hints[name], data[name], sub_path)
            _check_rules(fl, value, sub_path)
            kwargs[name] = value
    return cls(**kwargs)


def from_dict(data: dict[str, Any] | None, *, base_dir: str | Path | None = None,
              path_policy: str = "any") -> Scenario:
    """Build a validated :class:`Scenario` from plain data (as read from YAML).

    ``path_policy`` says which ``catalog`` paths the scenario may name: ``"any"`` (a Python
    caller's own data), ``"inside"`` (relative paths that stay inside ``base_dir``) or
    ``"none"`` (an uploaded file: catalogue files come by upload only).
    """
    if path_policy not in ("any", "inside", "none"):
        raise ValueError(f"path_policy must be 'any', 'inside' or 'none', got {path_policy!r}")
    scenario = _build(Scenario, data or {}, "")
    cross_checks(scenario)
    _check_catalog_paths(scenario.catalog, path_policy)
    _check_calibration(getattr(scenario, "calibration", None), path_policy)
    return dataclasses.replace(scenario, base_dir=Path(base_dir) if base_dir is not None else None,
                               path_policy=path_policy)


def _check_catalog_paths(paths: list[str], policy: str) -> None:
    """Refuse ``catalog`` paths the policy does not allow (the message never resolves a path)."""
    for i, text in enumerate(paths):
        _check_path(text, policy, f"catalog[{i}]", "catalogue files", "add your CSV files with the app's "
                                                                       "catalogue upload")


def _check_path(text: str, policy: str, where: str, what: str, fix: str) -> None:
    if policy == "any":
        return
    if policy == "none":
        raise ScenarioError(where, f"a scenario read from an upload cannot name {what} on the server: "
                                   f"remove {where.split('[')[0]}: and {fix}")
    p = PurePosixPath(text.replace("\\", "/"))
    if not text.strip() or p.is_absolute() or text.startswith("~") or re.match(r"^[A-Za-z]:", text) \
            or ".." in p.parts:
        raise ScenarioError(where, f"{excerpt(text)} is outside the scenario's folder: give a path relative to "
                                   "the scenario file, inside its folder (or pass --allow-paths)")


def _is_bare_name(text: str) -> bool:
    """A shipped profile's name (``h100-nccl-2024``): no folder, no suffix, nothing a path could be."""
    return bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", text))


def _check_calibration(text: str | None, policy: str) -> None:
    if text is None or _is_bare_name(text):  # the name of a shipped profile (checked when it is read)
        return
    if policy == "inside" and Path(text).is_absolute() and ".." not in Path(text).parts:
        return  # an absolute path: allowed inside the scenario's folder, which scenario_file checks on reading
    _check_path(text, policy, "calibration", "calibration files", "give the name of a shipped profile")


def scenario_file(scenario: Scenario, text: str, where: str) -> Path:
    """A file the scenario names (``catalog`` entries, ``calibration``), resolved against its folder.

    With the ``"inside"`` policy an absolute path is read when it resolves inside the folder (as the
    path relative to it), and a path that leaves the folder, also through a symbolic link, is refused;
    with ``"none"`` no file may be named. Errors name the key, never a resolved server path.
    """
    base = scenario.base_dir
    if scenario.path_policy == "inside" and base is not None and Path(text).is_absolute():
        try:
            text = Path(text).resolve().relative_to(Path(base).resolve()).as_posix()
        except (ValueError, OSError, RuntimeError):
            raise ScenarioError(where, f"{excerpt(text)} is outside the scenario's folder: give a path relative "
                                       "to the scenario file, inside its folder (or pass --allow-paths)") from None
    _check_path(text, scenario.path_policy, where, "files", "upload the file instead")
    p = Path(text).expanduser() if scenario.path_policy == "any" else Path(text)
    full = p if p.is_absolute() or base is None else base / p
    if scenario.path_policy == "inside" and base is not None:
        try:
            inside = full.resolve().is_relative_to(base.resolve())
        except (OSError, RuntimeError):
            inside = False
        if not inside:
            raise ScenarioError(where, f"{excerpt(text)} leads outside the scenario's folder (a symbolic "
                                       "link?): copy the file into it (or pass --allow-paths)")
    return full


def catalog_files(scenario: Scenario) -> list[Path]:
    """The scenario's ``catalog`` CSV files (:func:`scenario_file` for each entry)."""
    _check_catalog_paths(scenario.catalog, scenario.path_policy)
    return [scenario_file(scenario, text, f"catalog[{i}]") for i, text in enumerate(scenario.catalog)]


def cross_checks(s: Scenario) -> None:
    """Check the rules between fields that no single field can state (such as a power-supply
    redundancy that the node's supplies can meet), raising a :class:`ScenarioError` that names
    the field. :func:`from_dict` runs them; a caller that builds a scenario by replacing fields
    of a valid one (a sweep's point) runs them again on the result."""
    parts = s.hardware.parts
    if parts is not None and parts.psus is not None:
        n, m = parse_redundancy(parts.psus.redundancy, "hardware.parts.psus.redundancy")
        if n < 1:
            raise ScenarioError("hardware.parts.psus.redundancy",
                                f"'{s.hardware.parts.psus.redundancy}' leaves no usable supply: N must be at least 1")
        if n + m != s.hardware.parts.psus.count:
            raise ScenarioError("hardware.parts.psus.redundancy",
                                f"'{s.hardware.parts.psus.redundancy}' does not add up to the node's "
                                f"{s.hardware.parts.psus.count} power supplies")
    hw = s.hardware
    if hw.nodes is not None and hw.gpus is not None and hw.gpus_per_node is not None:
        if hw.nodes * hw.gpus_per_node != hw.gpus:
            raise ScenarioError("hardware.gpus", f"{hw.gpus} GPUs do not equal nodes x GPUs per node = "
                                f"{hw.nodes} x {hw.gpus_per_node}; give only two of the three")
    inf = s.inference
    if inf.requests_per_s is not None and inf.tokens_per_s is not None:
        raise ScenarioError("inference.tokens_per_s", "give a request rate or a token rate, not both")


def parse_redundancy(text: str, path: str = "redundancy") -> tuple[int, int]:
    """Parse an ``N+M`` redundancy scheme ('3+1', '1+1'; 2N with two supplies is '1+1')."""
    m = re.fullmatch(r"\s*(\d+)\s*\+\s*(\d+)\s*", str(text))
    if not m:
        raise ScenarioError(path, f"must be written N+M (e.g. '3+1' or '1+1'), got {excerpt(text)}")
    return int(m[1]), int(m[2])



# --------------------------------------------------------------------------- reading YAML

#: Largest scenario file or upload [bytes]; the shipped examples are about 1.5 KB.
MAX_SCENARIO_BYTES = 64 * 1024
#: Deepest nesting of lists and mappings (a scenario needs 4: hardware.parts.drives[0].id).
MAX_YAML_DEPTH = 20
#: YAML aliases (``*name``) one file may use.
MAX_YAML_ALIASES = 64
#: Values (scalars, lists, mappings) a file may hold once its aliases are expanded.
MAX_YAML_NODES = 20_000
#: Digits of an integer the reader accepts (every bound in the schema has fewer).
MAX_INT_DIGITS = 24

_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_RE = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_RE = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_TAG = "tag:yaml.org,2002:"


class _ScenarioLoader(yaml.SafeLoader):
    """PyYAML's safe loader read the way a person means the file (YAML 1.2 core schema), with limits.

    * Implicit types are the YAML 1.2 core schema's (yaml.org/spec/1.2.2, 10.3.2): ``010`` is
      ten (not octal eight), ``1:30`` is text (not sexagesimal 90), ``1e12`` is a number (YAML 1.1
      reads it as text), ``yes``/``no``/``on``/``off`` are text (a boolean field refuses them).
    * Only the core tags (``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!seq``,
      ``!!map``); ``!!int eight``, ``!!int ''`` and integers of more than :data:`MAX_INT_DIGITS`
      digits are refused at their line.
    * A key given twice in one mapping is refused (YAML forbids it; PyYAML keeps the last).
    * At most :data:`MAX_YAML_DEPTH` levels of nesting, :data:`MAX_YAML_ALIASES` aliases, and
      :data:`MAX_YAML_NODES` values once aliases are expanded (a "billion laughs" bomb is refused
      before anything is built); an alias inside its own anchor is refused.
    """

    yaml_implicit_resolvers: dict = {}
    yaml_constructors: dict = {}

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    # -- composing: depth and alias limits -------------------------------------------------
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_YAML_ALIASES} aliases",
                                                  self.peek_event().start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _expanded_size(node, {}, set())
        return node

    # -- constructing: duplicate keys ------------------------------------------------------
    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise yaml.constructor.ConstructorError(
                        None, None, "a key must be a name, not a list or a mapping", key_node.start_mark)
                if key_node.value in first:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {excerpt(key_node.value)} (first on line "
                        f"{first[key_node.value] + 1}); give each key once", key_node.start_mark)
                first[key_node.value] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> int:
        text = str(self.construct_scalar(node))
        if not _INT_RE.match(text):
            raise yaml.constructor.ConstructorError(None, None, f"{excerpt(text)} is not an integer",
                                                    node.start_mark)
        digits = text.lstrip("+-")
        if len(digits) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(digits):,} digits is too large", node.start_mark)
        return int(text, 0) if digits[:2] in ("0o", "0x") else int(text, 10)

    def construct_yaml_float(self, node: Any) -> float:
        text = str(self.construct_scalar(node))
        if not (_FLOAT_RE.match(text) or _INT_RE.match(text)) or len(text) > 64:
            raise yaml.constructor.ConstructorError(None, None, f"{excerpt(text)} is not a number",
                                                    node.start_mark)
        if _INT_RE.match(text) and text.lstrip("+-")[:2] in ("0o", "0x"):
            return float(int(text, 0))
        low = text.lower()
        if low.endswith(".inf"):
            return float("-inf") if low.startswith("-") else float("inf")
        if low == ".nan":
            return float("nan")
        return float(text)

    def construct_yaml_bool(self, node: Any) -> bool:
        text = str(self.construct_scalar(node))
        if not _BOOL_RE.match(text):
            raise yaml.constructor.ConstructorError(None, None, f"{excerpt(text)} is not true or false",
                                                    node.start_mark)
        return text.lower() == "true"

    def construct_yaml_null(self, node: Any) -> None:
        text = str(self.construct_scalar(node))
        if not _NULL_RE.match(text):
            raise yaml.constructor.ConstructorError(None, None, f"{excerpt(text)} is not null", node.start_mark)
        return None

    def construct_unknown(self, node: Any) -> Any:
        raise yaml.constructor.ConstructorError(
            None, None, f"the tag {excerpt(node.tag)} is not allowed in a scenario", node.start_mark)


for _name, _ctor in (("null", _ScenarioLoader.construct_yaml_null), ("bool", _ScenarioLoader.construct_yaml_bool),
                     ("int", _ScenarioLoader.construct_yaml_int), ("float", _ScenarioLoader.construct_yaml_float),
                     ("str", yaml.SafeLoader.construct_yaml_str), ("seq", yaml.SafeLoader.construct_yaml_seq),
                     ("map", yaml.SafeLoader.construct_yaml_map)):
    _ScenarioLoader.add_constructor(_TAG + _name, _ctor)
_ScenarioLoader.add_constructor(None, _ScenarioLoader.construct_unknown)
for _name, _re, _first in (("null", _NULL_RE, ["~", "n", "N", ""]), ("bool", _BOOL_RE, list("tTfF")),
                           ("int", _INT_RE, list("-+0123456789")), ("float", _FLOAT_RE, list("-+0123456789."))):
    _ScenarioLoader.add_implicit_resolver(_TAG + _name, _re, _first)


def _expanded_size(node: Any, sizes: dict[int, int], open_: set[int]) -> int:
    """Values under ``node`` with every alias expanded; refuses a total over MAX_YAML_NODES and cycles."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_:
        raise yaml.composer.ComposerError(None, None, "an alias refers to the list or mapping it is inside",
                                          node.start_mark)
    total = 1
    if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
        open_.add(key)
        children = node.value if isinstance(node, yaml.SequenceNode) else [n for kv in node.value for n in kv]
        for child in children:
            total += _expanded_size(child, sizes, open_)
            if total > MAX_YAML_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f"holds more than {MAX_YAML_NODES:,} values once its aliases are expanded",
                    node.start_mark)
        open_.discard(key)
    sizes[key] = total
    return total


def _flow_depth_check(text: str) -> None:
    """Refuse flow brackets (``[``, ``{``) nested deeper than MAX_YAML_DEPTH before PyYAML scans them.

    PyYAML's scanner keeps a possible simple key per open flow level and re-checks them all at
    every token, so 500 nested ``[`` take about half a second before the composer's depth limit
    is reached; this linear pass stops them at once. Brackets inside quotes and comments are skipped.
    """
    if text.count("[") + text.count("{") <= MAX_YAML_DEPTH:
        return
    depth, quote, line, col, prev = 0, "", 0, 0, "\n"
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line, col = line + 1, -1
            if quote == "#":
                quote = ""
        elif quote == "#":
            pass
        elif quote:
            if ch == "\\" and quote == '"':
                i, col = i + 1, col + 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"" and (prev in " \t\n[{,:" ):
            quote = ch
        elif ch == "#" and prev in " \t\n":
            quote = "#"
        elif ch in "[{":
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                    yaml.error.Mark("<scenario>", i, line, col, None, None))
        elif ch in "]}":
            depth = max(depth - 1, 0)
        prev = ch
        i, col = i + 1, col + 1


def _read_yaml(text: str, source: str) -> Any:
    try:
        _flow_depth_check(text)
        return yaml.load(text, Loader=_ScenarioLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = str(getattr(e, "problem", None) or getattr(e, "reason", None) or "cannot be read")[:200]
        if "'\\t'" in problem:  # PyYAML: "found character '\t' that cannot start any token"
            problem = "a tab character; YAML indents with spaces only: replace the tabs with spaces"
        raise ScenarioError("", f"{source}: not valid YAML{where}: {problem}") from None


def load_scenario(path: str | Path, *, allow_paths: bool = False) -> Scenario:
    """Read a scenario YAML file. Errors name the file and the key path.

    ``catalog:`` paths resolve against the file's folder and must stay inside it (no absolute
    or ``../`` paths) unless ``allow_paths`` (the CLI's ``--allow-paths``).
    """
    p = Path(path)
    try:
        if p.is_dir():
            raise ScenarioError("", f"{p.name or path} is a folder, not a scenario file: give a .yaml file")
        size = p.stat().st_size
        if size > MAX_SCENARIO_BYTES:
            raise ScenarioError("", f"{p.name}: is {size:,} bytes, more than the {MAX_SCENARIO_BYTES:,} a scenario "
                                    "may have")
        with p.open("rb") as fh:
            data = fh.read(MAX_SCENARIO_BYTES + 1)
    except FileNotFoundError:
        raise ScenarioError("", f"scenario file not found: {path}") from None
    except OSError as e:
        raise ScenarioError("", f"cannot read the scenario file {p.name}: {e.strerror or type(e).__name__}") from None
    return loads(data, base_dir=p.parent, source=p.name, allow_paths=allow_paths)


def loads(text: str | bytes, *, base_dir: str | Path | None = None, source: str = "<scenario>",
          allow_paths: bool = False) -> Scenario:
    """Build a scenario from YAML text or bytes (as uploaded in the app).

    Refused with a message: more than :data:`MAX_SCENARIO_BYTES`, text that is not UTF-8,
    a binary file, YAML over the limits of :class:`_ScenarioLoader`, and an empty file.
    ``catalog:`` paths: without ``base_dir`` none may be given (an upload names catalogue files
    by uploading them); with it, they resolve against it and stay inside it unless ``allow_paths``.
    """
    source = excerpt(source, 80).strip("'\"") if len(source) > 80 else source
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = decode_text(bytes(text), limit_bytes=MAX_SCENARIO_BYTES)
        except ValueError as e:
            raise ScenarioError("", f"{source}: {e}") from None
    else:
        if len(text) > MAX_SCENARIO_BYTES:
            raise ScenarioError("", f"{source}: is {len(text):,} characters, more than the {MAX_SCENARIO_BYTES:,} "
                                    "a scenario may have")
        try:
            text = decode_text(text, limit_bytes=MAX_SCENARIO_BYTES)
        except ValueError as e:
            raise ScenarioError("", f"{source}: {e}") from None
    data = _read_yaml(text, source)
    if data is None:  # an empty file, blanks or comments only
        raise ScenarioError("", f"{source}: empty scenario: give at least hardware "
                                "(e.g. hardware: {server: dgx-h100, nodes: 4})")
    if not isinstance(data, dict):
        raise ScenarioError("", f"{source}: the top level must be a mapping (name:, model:, hardware:, ...)")
    policy = "any" if allow_paths else ("inside" if base_dir is not None else "none")
    return from_dict(data, base_dir=base_dir, path_policy=policy)


def to_dict(obj: Any, *, drop_none: bool = True) -> Any:
    """Plain data for YAML/JSON. ``None`` fields and empty sections are dropped."""
    if dataclasses.is_dataclass(obj):
        out = {}
        for fl in dataclasses.fields(obj):
            if fl.metadata.get("internal"):
                continue
            v = to_dict(getattr(obj, fl.name), drop_none=drop_none)
            if drop_none and (v is None or v == {} or v == []):
                continue
            out[fl.name] = v
        return out
    if isinstance(obj, list):
        return [to_dict(v, drop_none=drop_none) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v, drop_none=drop_none) for k, v in obj.items()}
    return obj


def dumps(scenario: Scenario) -> str:
    """The scenario as YAML (what the app's download gives)."""
    return yaml.safe_dump(to_dict(scenario), sort_keys=False, allow_unicode=True)


def _bounds_text(md: Any) -> str:
    """The field's range in words for the reference table: ``0 < x <= 100,000``, ``at most 200 characters``."""
    def num(v: float) -> str:
        return f"{v:g}" if isinstance(v, float) and (v >= 1e7 or not v.is_integer()) else f"{v:,}"

    lo = f"{num(md['ge'])} <= " if "ge" in md else (f"{num(md['gt'])} < " if "gt" in md else "")
    hi = f" <= {num(md['le'])}" if "le" in md else (f" < {num(md['lt'])}" if "lt" in md else "")
    if lo or hi:
        return f"{lo}x{hi}"
    if "max_len" in md:
        return f"at most {md['max_len']:,} characters"
    return ""


def field_docs(cls: type = Scenario, prefix: str = "") -> list[tuple[str, str, str]]:
    """(key path, type, doc) for every scenario key: the reference table in docs/scenario.md."""
    rows = []
    hints = typing.get_type_hints(cls)
    for fl in dataclasses.fields(cls):
        if fl.metadata.get("internal"):
            continue
        path = f"{prefix}{fl.name}"
        tp = hints[fl.name]
        inner = [a for a in get_args(tp) if dataclasses.is_dataclass(a)] or ([tp] if dataclasses.is_dataclass(tp) else [])
        if inner:
            rows.extend(field_docs(inner[0], path + "."))
        else:
            doc = fl.metadata.get("doc", "")
            unit = fl.metadata.get("unit", "")
            bounds = _bounds_text(fl.metadata)
            rows.append((path, _describe(tp).replace("typing.", ""),
                         (f"[{unit}] " if unit else "") + doc + (f" ({bounds})" if bounds else "")))
    return rows
