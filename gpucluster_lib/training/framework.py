"""Training frameworks: the software terms of the step-time model (``data/training_frameworks.yaml``).

A :class:`Framework` carries what belongs to the training software rather than to the GPU:
the time per pipeline slot relative to Megatron-LM, whether the pipeline boundary is split
over the tensor ranks (Narayanan 2021 Sec. 4.1 scatter/gather), the gradient reduction
precision, and which data-parallel and tensor-parallel communication it overlaps by default.
Every value carries its source in the YAML file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from gpucluster_lib.errors import CatalogError, ScenarioError, excerpt
from gpucluster_lib.resources import data_path, load_yaml

FRAMEWORKS_PATH = data_path("training_frameworks.yaml")


@dataclass(frozen=True)
class Framework:
    """Per-framework terms (dimensionless factors, bytes per element, parameters)."""

    id: str
    name: str
    pipeline_stage_factor: float
    p2p_scatter_gather: bool
    grad_reduce_bytes: float
    overlap_grad_reduce: bool
    overlap_param_gather: bool
    bucket_params: float
    bucket_params_per_dp_rank: float
    tp_comm_overlap: bool
    #: ZeRO-3 parameter prefetch: "module" (one module ahead, DeepSpeed), "unit" (one wrapped layer
    #: ahead, PyTorch FSDP) or "fraction" (the fitted share ``zero3_overlap``)
    zero3_prefetch: str = "fraction"
    #: FSDP's backward prefetch (``zero3_prefetch: unit``): "post" (BACKWARD_POST), "pre" (BACKWARD_PRE)
    #: or "none"
    backward_prefetch: str = "post"
    #: bytes per parameter element of the ZeRO-3 / FSDP parameter all-gathers
    zero3_gather_bytes: float = 2.0
    #: bytes per gradient element of the ZeRO-3 / FSDP gradient reduce-scatter
    zero3_reduce_bytes: float = 2.0
    #: DeepSpeed ZeRO-3 (``zero3_prefetch: module``): no prefetch while this many parameter elements
    #: are gathered (``stage3_max_live_parameters``) [elements]
    zero3_max_live_params: float = float("inf")
    #: DeepSpeed ZeRO-3: elements a prefetch takes, whole parameters (``stage3_prefetch_bucket_size``) [elements]
    zero3_prefetch_params: float = 0.0
    #: fixed time per optimizer step [s] (host-side per-step work of the training loop)
    step_fixed_s: float = 0.0
    #: the cross-entropy loss the framework runs (a key of data/training_frameworks.yaml ``cross_entropy_losses``);
    #: None: data/efficiency.yaml's generic ``cross_entropy_bytes_per_logit``
    cross_entropy_loss: str | None = None
    #: memory traffic of that loss over the vocabulary, forward + backward, per logit of the GPU's vocabulary
    #: shard [bytes], counted from its code (``cross_entropy_losses``); None: data/efficiency.yaml's generic value
    cross_entropy_bytes_per_logit: float | None = None
    #: what selective recomputation reruns: "attention" (Megatron-LM's --recompute-granularity selective: the
    #: attention core, free with a fused kernel) or "every_second_mm" (TorchTitan's op-level selective
    #: checkpointing: every second matmul of a block's forward is recomputed in the backward)
    selective_recompute: str = "attention"
    #: the interleaved pipeline schedule issues its point-to-point transfers asynchronously and waits for them
    #: one chunk later (Megatron-Core ``overlap_p2p_comm``; core.py [26]); read only with virtual stages
    overlap_p2p_comm: bool = False
    #: the framework's pipeline schedule has that overlap as an option (Megatron-LM since 2023-05-31, commit
    #: f9283c5a8a; NeMo through Megatron-Core); false: ``parallelism.overlap_p2p_comm`` is ignored with a warning
    p2p_overlap_path: bool = False
    #: full activation checkpointing stops recomputing once every tensor saved for the backward is
    #: back (PyTorch >= 2.1 non-reentrant checkpoint, ``set_checkpoint_early_stop``); false: the
    #: whole layer is recomputed (Megatron-LM, DeepSpeed, PyTorch's reentrant checkpoint)
    checkpoint_early_stop: bool = False
    #: in FP8 the linear layers save the FP8 cast of their inputs for the weight gradient, one byte per
    #: element (Transformer Engine)
    fp8_saved_inputs: bool = False
    #: in FP8 each linear layer keeps its FP8 weight and transpose beside the 16-bit weight across the
    #: micro-batches of a step (Transformer Engine's weight workspace, with ``is_first_microbatch``)
    fp8_weight_copies: bool = False
    #: FP8 primary weights (Megatron ``--fp8-param-gather``, NeMo ``fp8_params``): the FP8 weight and its
    #: transpose replace the 16-bit weight, no extra copy
    fp8_params: bool = False
    #: the framework has an FP8-weight path (Megatron-Core ``fp8_param_gather``, torchao's float8 FSDP2
    #: all-gather): ``training.fp8_params`` is read only then
    fp8_param_gather: bool = False
    #: ZeRO-3's parameter all-gathers move FP8 weights (``fp8_params``, ``training.fp8_params``) in one byte;
    #: false: they stay in ``zero3_gather_bytes`` whatever the setting (NeMo 25.04's performance scripts turn
    #: fp8_param_gather off under Megatron-FSDP, data/training_frameworks.yaml)
    zero3_fp8_param_gather: bool = True
    #: TP communication overlap may run beside ZeRO-3 (the plan search offers both together); false: not
    #: (NeMo 25.04's performance scripts turn TP overlap off with Megatron-FSDP and TP > 1)
    zero3_tp_comm_overlap: bool = True
    #: the framework runs a pipeline schedule (false: llm-foundry / Composer, which have none of their own): plans with
    #: pipeline parallelism are an error finding and the plan search leaves them out
    pipeline_schedule: bool = True
    #: the highest ZeRO stage the framework runs together with pipeline parallelism (DeepSpeed's PipelineEngine
    #: refuses ZeRO-2 and ZeRO-3: 1)
    pipeline_max_zero: int = 3
    #: ZeRO-3 beside pipeline stages: "micro_batch" (every micro-batch gathers the parameters and reduce-scatters
    #: its gradients) or "step" (TorchTitan's FSDP2 under torch.distributed.pipelining: the parameters stay
    #: gathered and the gradients unreduced for the whole step, reduce-scattered once after the last backward)
    pipeline_zero3: str = "micro_batch"
    #: the framework runs Megatron's TP communication overlap (``parallelism.tp_comm_overlap``) or one like it;
    #: false: Megatron-DeepSpeed and llm-foundry, which have none
    tp_overlap_path: bool = True
    #: what tensor parallelism splits: "layer" (attention and feed-forward, Megatron's split, which the engine
    #: models) or "ffn" (llm-foundry's ffn strategy: the feed-forward projections only); the plan search offers
    #: TP > 1 only for "layer"
    tp_scope: str = "layer"
    #: the framework runs ring-attention context parallelism, the kind modelled (false: llm-foundry / Composer, which
    #: have none, and DeepSpeed, whose Ulysses sequence split is not modelled)
    cp_path: bool = True
    #: FP8 training runs through Transformer Engine (its recipes' casts and, with ``training.transformer_engine``,
    #: what that release has); false for TorchTitan (torchao's float8)
    fp8_transformer_engine: bool = True
    #: ZeRO-3 unsharded gradients held in the reduce-scatter queue at the backward peak, in layers' worth of
    #: elements in ``zero3_reduce_bytes`` (Megatron-FSDP's ``suggested_RS_queue_capacity``: two units) [layers]
    zero3_reduce_queue_layers: float = 0.0
    #: what the last data-parallel gradient reduction of an overlapped backward holds at least: "embedding" (the
    #: input embedding, Megatron-Core's last bucket) or "root_unit" (FSDP's root unit: embedding, final norm and
    #: untied output layer, with one transformer layer per wrapped unit)
    dp_last_reduction: str = "embedding"
    #: the gradient buffer is held in the data-parallel reduction precision (Megatron-Core's
    #: ``grad_reduce_in_fp32`` main-gradient buffer, Apex DistributedFusedAdam's ``grad_sync_dtype``);
    #: false: 16-bit gradients
    grad_buffer_in_reduce_precision: bool = False
    #: the sharded gradients take the sharded parameters' dtype, fp32 with fp32 master weights (FSDP2: ``foreach_reduce``
    #: casts the reduce-scatter output to the parameter's ``orig_dtype``)
    grad_in_param_precision: bool = False
    #: the framework can defer the output layer's weight-gradient GEMMs of the last pipeline stage to the
    #: pipeline flush (Megatron-Core ``defer_embedding_wgrad_compute``): ``training.defer_output_wgrad`` is
    #: read only then
    output_wgrad_deferral: bool = False
    #: default of ``training.defer_output_wgrad`` (Megatron-Core's ``defer_embedding_wgrad_compute``)
    defer_output_wgrad: bool = False
    #: default of ``training.wgrad_deferral_limit``: micro-batches whose output-layer weight gradient is
    #: deferred, 0 = all (Megatron-Core's ``wgrad_deferral_limit``)
    wgrad_deferral_limit: int = 0
    #: the fused attention kernel run on each GPU generation unless ``training.attention_kernel`` names
    #: one: ``(generation, kernel)`` pairs (a tuple, so that the framework stays hashable)
    attention_kernels: tuple[tuple[str, str], ...] = (("ampere", "flash-attention-2"),
                                                      ("hopper", "flash-attention-2"),
                                                      ("blackwell", "flash-attention-2"),
                                                      ("default", "flash-attention-2"))
    #: the kernel the framework runs instead when cuDNN's fused attention cannot train the model's attention heads
    #: on the GPU (:func:`~gpucluster_lib.training.efficiency.cudnn_trains_heads`): Transformer Engine's next
    #: backend, flash-attn, for Megatron-Core and NeMo; None: the framework's kernel is kept
    attention_fallback: str | None = None

    #: FP8 training: the scaling recipe (a key of ``fp8_recipes``), the linear layers whose FP8 input the
    #: norm writes (of "qkv", "fc1") and how often the FP8 weights are made ("step" or "micro_batch")
    fp8_recipe: str = "delayed"
    fp8_norm_fused: tuple[str, ...] = ()
    fp8_weight_cast: str = "micro_batch"

    def attention_kernel(self, generation: str) -> str:
        """The fused attention kernel this framework runs on a GPU generation (``ampere``, ``hopper``,
        ``blackwell``; any other: its ``default``)."""
        kernels = dict(self.attention_kernels)
        return kernels.get(generation, kernels["default"])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Fp8Casts:
    """The memory traffic of FP8 training's casts per element of the 16-bit tensor cast [bytes], and the FP8
    GEMM kernel's rate relative to per-tensor FP8 (data/training_frameworks.yaml ``fp8_recipes``, resolved
    for one framework and GPU generation).

    ``cast``: read 2 + write the row-wise FP8 copy 1 + the separate amax pass ``amax`` + block scales;
    ``columnwise``: the column-wise copy the backward's GEMMs read (1 byte written with the cast; or, for a
    tensor the norm writes or an FP8 tensor gathered over sequence parallelism, a transpose: read 1 and
    write 1, ``2 columnwise``). A tensor cast on its own costs ``quantize = cast + columnwise``. With
    ``norm_fusion`` the norm writes the FP8 input of ``norm_qkv`` / ``norm_fc1`` itself (1 byte instead of
    2: -1 forward) and the column-wise copy is a transpose in the backward; without it the norm writes 16
    bits and the cast reads them, the amax taken by the norm when ``amax_in_norm``. With
    ``gather_quantized`` and sequence parallelism, the tensors gathered over the tensor-parallel ranks (the
    column-parallel inputs, the row-parallel output gradients) are cast on the local 1/t shard and
    gathered in FP8, the column-wise copy a transpose of the gathered tensor."""

    recipe: str
    cast: float
    columnwise: float
    amax: float
    norm_fusion: bool
    amax_in_norm: bool
    gather_quantized: bool
    norm_qkv: bool
    norm_fc1: bool
    weight_cast_per_step: bool
    gemm_rate: float
    #: block scales per element (MXFP8: one E8M0 byte per 32 elements for each copy, 0.0625) [bytes]
    scales: float = 0.0

    @property
    def quantize(self) -> float:
        """Bytes per element of a 16-bit tensor cast on its own [bytes]."""
        return self.cast + self.columnwise

    @property
    def weight_bytes(self) -> float:
        """Bytes per element of an FP8 weight as Transformer Engine keeps it (its weight copy, or an FP8 primary
        weight): the row-wise copy, the column-wise copy where the GEMMs need one, the block scales [bytes].
        Hopper 1 + 1 = 2; Blackwell per-tensor 1 (columnwise_copy 0: no transpose); MXFP8 1 + 1 + 0.0625."""
        return 1.0 + self.columnwise + self.scales


@dataclass(frozen=True)
class TpOverlap:
    """Terms of Megatron's ``--tp-comm-overlap`` (Transformer Engine userbuffers)."""

    sm_contention: float  # fraction of the GEMM rate lost while communication overlaps it
    reduce_scatter_splits: float  # chunks of the pipelined GEMM + reduce-scatter


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    with FRAMEWORKS_PATH.open(encoding="utf-8") as fh:
        return load_yaml(fh)


def framework_ids() -> list[str]:
    return list(_table()["frameworks"])


def framework_rows() -> dict[str, Any]:
    """The ``frameworks`` mapping of ``data/training_frameworks.yaml``, as written (read-only)."""
    return _table()["frameworks"]


@lru_cache(maxsize=16)
def framework(name: str = "megatron") -> Framework:
    """The framework ``name`` of ``data/training_frameworks.yaml``; ``ScenarioError`` naming
    ``training.framework`` when unknown."""
    rows = _table()["frameworks"]
    if name not in rows:
        raise ScenarioError("training.framework", f"unknown framework {name!r}; valid: {', '.join(rows)}")
    return framework_from_rows(name, rows)


#: Keys that are true or false (anything else is refused when loaded).
BOOLEAN_KEYS = ("checkpoint_early_stop", "fp8_saved_inputs", "fp8_weight_copies", "fp8_params", "fp8_param_gather",
                "grad_buffer_in_reduce_precision", "grad_in_param_precision", "overlap_p2p_comm", "output_wgrad_deferral", "defer_output_wgrad",
                "p2p_overlap_path")
#: Keys that are true or false and true when absent.
BOOLEAN_KEYS_TRUE = ("zero3_fp8_param_gather", "zero3_tp_comm_overlap", "fp8_transformer_engine", "pipeline_schedule",
                     "tp_overlap_path", "cp_path")

#: The values the schedule keys may take (:class:`Framework`); anything else is refused when loaded.
SCHEDULE_CHOICES = {"zero3_prefetch": ("module", "unit", "fraction"), "backward_prefetch": ("post", "pre", "none"),
                    "selective_recompute": ("attention", "every_second_mm"),
                    "dp_last_reduction": ("embedding", "root_unit"), "pipeline_zero3": ("micro_batch", "step"),
                    "tp_scope": ("layer", "ffn")}


def framework_from_rows(name: str, rows: dict[str, Any]) -> Framework:
    """The framework ``name`` of the ``frameworks`` mapping of ``data/training_frameworks.yaml``
    (a ``same_as`` row takes its base's terms); a ``CatalogError`` naming the framework and the key
    when a schedule key has a value the engine does not know (a typo would silently select
    another schedule)."""
    row = dict(rows[name])
    base = row.pop("same_as", None)
    if base is not None:  # the base framework's terms, with the ones this row states
        row = {**rows[base], **row}
    for key, choices in SCHEDULE_CHOICES.items():
        if key in row and row[key] not in choices:
            raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                               f"framework {name}, {key}: must be one of {', '.join(choices)}, got {row[key]!r}")
    for key in (*BOOLEAN_KEYS, *BOOLEAN_KEYS_TRUE):
        if not isinstance(row.get(key, key in BOOLEAN_KEYS_TRUE), bool):
            raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                               f"framework {name}, {key}: must be true or false, got {row[key]!r}")
    if row.get("fp8_params", False) and not row.get("fp8_param_gather", False):
        raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                           f"framework {name}, fp8_params: FP8 weights by default need an FP8-weight path "
                           "(fp8_param_gather: true)")
    if row.get("defer_output_wgrad", False) and not row.get("output_wgrad_deferral", False):
        raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                           f"framework {name}, defer_output_wgrad: needs the deferral path (output_wgrad_deferral: true)")
    max_zero = row.get("pipeline_max_zero", 3)
    if isinstance(max_zero, bool) or max_zero not in (0, 1, 2, 3):
        raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                           f"framework {name}, pipeline_max_zero: must be a ZeRO stage from 0 to 3, got {max_zero!r}")
    kernels = _attention_kernels(name, row.get("attention_kernel"))
    fallback = row.get("attention_fallback")
    if fallback is not None:
        from gpucluster_lib.training.efficiency import attention_kernels

        if fallback not in attention_kernels():
            raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                               f"framework {name}, attention_fallback: must be one of {', '.join(attention_kernels())}, "
                               f"got {fallback!r}")
    fp8 = _fp8_terms(name, row)
    loss = row.get("cross_entropy_loss")
    if loss is not None and loss not in _table()["cross_entropy_losses"]:
        raise CatalogError(FRAMEWORKS_PATH.name, None, None, f"framework {name}, cross_entropy_loss: must be one of "
                           f"{', '.join(_table()['cross_entropy_losses'])}, got {loss!r}")
    return Framework(id=name, name=str(row["name"]), pipeline_stage_factor=float(row["pipeline_stage_factor"]),
                     p2p_scatter_gather=bool(row["p2p_scatter_gather"]),
                     grad_reduce_bytes=float(row["grad_reduce_bytes"]),
                     overlap_grad_reduce=bool(row["overlap_grad_reduce"]),
                     overlap_param_gather=bool(row["overlap_param_gather"]),
                     bucket_params=float(row["bucket_params"]),
                     bucket_params_per_dp_rank=float(row["bucket_params_per_dp_rank"]),
                     tp_comm_overlap=bool(row["tp_comm_overlap"]),
                     zero3_prefetch=str(row.get("zero3_prefetch", "fraction")),
                     backward_prefetch=str(row.get("backward_prefetch", "post")),
                     zero3_gather_bytes=float(row.get("zero3_gather_bytes", 2.0)),
                     zero3_reduce_bytes=float(row.get("zero3_reduce_bytes", 2.0)),
                     zero3_max_live_params=float(row.get("zero3_max_live_params", float("inf"))),
                     zero3_prefetch_params=float(row.get("zero3_prefetch_params", 0.0)),
                     step_fixed_s=float(row.get("step_fixed_s", 0.0)),
                     cross_entropy_loss=loss,
                     cross_entropy_bytes_per_logit=None if loss is None else cross_entropy_bytes(loss),
                     selective_recompute=str(row.get("selective_recompute", "attention")),
                     wgrad_deferral_limit=int(row.get("wgrad_deferral_limit", 0)),
                     zero3_reduce_queue_layers=float(row.get("zero3_reduce_queue_layers", 0.0)),
                     dp_last_reduction=str(row.get("dp_last_reduction", "embedding")),
                     pipeline_zero3=str(row.get("pipeline_zero3", "micro_batch")),
                     tp_scope=str(row.get("tp_scope", "layer")),
                     pipeline_max_zero=int(max_zero),
                     **{key: bool(row.get(key, True)) for key in BOOLEAN_KEYS_TRUE},
                     attention_kernels=kernels, attention_fallback=fallback, **fp8,
                     **{key: bool(row.get(key, False)) for key in BOOLEAN_KEYS})


#: The GPU generations a framework's ``attention_kernel`` names (the keys of data/efficiency.yaml).
GENERATIONS = ("ampere", "hopper", "blackwell", "default")


def _attention_kernels(name: str, value: Any) -> tuple[tuple[str, str], ...]:
    """A framework's ``attention_kernel`` mapping as ``(generation, kernel)`` pairs; a ``CatalogError``
    naming the framework when it is not a mapping of every generation to a kernel of
    data/efficiency.yaml ``attention_kernels`` (absent: FlashAttention-2 everywhere)."""
    from gpucluster_lib.training.efficiency import DEFAULT_ATTENTION_KERNEL, attention_kernels

    if value is None:
        return tuple((g, DEFAULT_ATTENTION_KERNEL) for g in GENERATIONS)
    known = attention_kernels()
    if not isinstance(value, dict) or set(value) != set(GENERATIONS):
        raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                           f"framework {name}, attention_kernel: must map each of {', '.join(GENERATIONS)} "
                           f"to a kernel, got {value!r}")
    for gen, kernel in value.items():
        if kernel not in known:
            raise CatalogError(FRAMEWORKS_PATH.name, None, None,
                               f"framework {name}, attention_kernel.{gen}: must be one of {', '.join(known)}, "
                               f"got {kernel!r}")
    return tuple((g, str(value[g])) for g in GENERATIONS)


#: The linear layers whose input a norm can write in FP8, and how often the FP8 weights can be made.
FP8_NORM_LINEARS = ("qkv", "fc1")
FP8_WEIGHT_CASTS = ("step", "micro_batch")


def cross_entropy_losses() -> dict[str, str]:
    """Every cross-entropy loss implementation a scenario may choose (``training.cross_entropy_loss``): id ->
    human name (data/training_frameworks.yaml ``cross_entropy_losses``)."""
    return {k: str(v["name"]) for k, v in _table()["cross_entropy_losses"].items()}


def cross_entropy_bytes(loss: str) -> float:
    """Memory traffic of the cross-entropy implementation ``loss`` per logit of the GPU's vocabulary shard,
    forward + backward [bytes], counted from its kernels (data/training_frameworks.yaml
    ``cross_entropy_losses``, where each value names its source); ``ScenarioError`` naming
    ``training.cross_entropy_loss`` when unknown."""
    table = _table()["cross_entropy_losses"]
    if loss not in table:
        raise ScenarioError("training.cross_entropy_loss", f"unknown loss {loss!r}; valid: {', '.join(table)}")
    return float(table[loss]["bytes_per_logit"])


def te_release(text: str | None) -> tuple[int, ...] | None:
    """A Transformer Engine release ('1.14', '2.2.0') as a comparable tuple (1, 14), or None for none (a current
    release). The scenario has checked its form (``training.transformer_engine``)."""
    if text is None:
        return None
    parts = str(text).split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() for p in parts):
        raise ScenarioError("training.transformer_engine",
                            f"must be a release number such as '1.14' or '2.2', got {excerpt(text)}")
    return tuple(int(x) for x in parts)


def te_requirement(kind: str, key: str, release: str | None, field: str, what: str) -> None:
    """A ``ScenarioError`` naming ``training.transformer_engine`` when ``release`` predates the first Transformer Engine
    release with the feature ``key`` of the table ``kind`` (``fp8_recipes`` or ``cross_entropy_losses``: its
    ``transformer_engine``); ``what`` is the feature in words, ``field`` the scenario key that chose it."""
    need = _table()[kind][key].get("transformer_engine")
    have = te_release(release)
    if need is None or have is None or have >= te_release(str(need)):
        return
    raise ScenarioError("training.transformer_engine",
                        f"{what} is in Transformer Engine from release {need}, but this scenario gives {release}; "
                        f"give release {need} or later, or choose another {field}")


def fp8_recipes() -> dict[str, str]:
    """Every FP8 scaling recipe a scenario may choose (``training.fp8_recipe``): id -> human name."""
    return {k: str(v["name"]) for k, v in _table()["fp8_recipes"].items()}


def _fp8_terms(name: str, row: dict[str, Any]) -> dict[str, Any]:
    """A framework's FP8 keys (``fp8_recipe``, ``fp8_norm_fused``, ``fp8_weight_cast``) as
    :class:`Framework` fields; a ``CatalogError`` naming the framework and the key for a value the engine
    does not know."""
    recipe = str(row.get("fp8_recipe", "delayed"))
    if recipe not in _table()["fp8_recipes"]:
        raise CatalogError(FRAMEWORKS_PATH.name, None, None, f"framework {name}, fp8_recipe: must be one of "
                           f"{', '.join(_table()['fp8_recipes'])}, got {recipe!r}")
    fused = row.get("fp8_norm_fused", [])
    if not isinstance(fused, list) or any(x not in FP8_NORM_LINEARS for x in fused):
        raise CatalogError(FRAMEWORKS_PATH.name, None, None, f"framework {name}, fp8_norm_fused: must be a list of "
                           f"{', '.join(FP8_NORM_LINEARS)}, got {fused!r}")
    cast = str(row.get("fp8_weight_cast", "micro_batch"))
    if cast not in FP8_WEIGHT_CASTS:
        raise CatalogError(FRAMEWORKS_PATH.name, None, None, f"framework {name}, fp8_weight_cast: must be one of "
                           f"{', '.join(FP8_WEIGHT_CASTS)}, got {cast!r}")
    return {"fp8_recipe": recipe, "fp8_norm_fused": tuple(fused), "fp8_weight_cast": cast}


#: GPU generations (data/efficiency.yaml keys) in words; "default" is any other accelerator.
GENERATION_WORDS = {"ampere": "Ampere", "hopper": "Hopper", "blackwell": "Blackwell"}


def fp8_casts(fw: Framework, generation: str, recipe: str | None = None,
              accelerator_name: str | None = None, transformer_engine: str | None = None) -> Fp8Casts:
    """The FP8 cast traffic of framework ``fw`` on a GPU generation with ``recipe`` (default the
    framework's): see :class:`Fp8Casts` and data/training_frameworks.yaml ``fp8_recipes``. A
    ``ScenarioError`` naming ``training.fp8_recipe`` for an unknown recipe or one the generation lacks
    (MXFP8 before Blackwell), in words: "MXFP8 block scaling needs a Blackwell GPU; the NVIDIA H100 SXM5 80GB
    is a Hopper GPU; choose delayed or current scaling" (``accelerator_name``: the GPU's name in the message).

    ``transformer_engine``: the run's Transformer Engine release (None: a current one). Before the release that runs
    FP8 GEMMs in any layout on Blackwell (``transformer_engine.non_tn_fp8_gemm``, 2.0) Blackwell keeps Hopper's
    column-wise copy; a recipe newer than the release (its ``transformer_engine``) is refused naming
    ``training.transformer_engine``.

    Delayed scaling on Hopper: quantize 2 + 1 + 1 = 4 bytes; a norm-written input -1 forward, +2
    backward. Current scaling on Hopper: 4 + 2 (amax pass) = 6; a norm-written input 4 (the norm takes
    the amax). MXFP8 on Blackwell: 2 + 1 + 0.0625 + 1 = 4.0625 bytes, its norm input the same.
    """
    recipes = _table()["fp8_recipes"]
    name = recipe or fw.fp8_recipe
    if name not in recipes:
        raise ScenarioError("training.fp8_recipe", f"{name} is not an FP8 scaling recipe; choose "
                            f"{', '.join(list(recipes)[:-1])} or {list(recipes)[-1]}")
    r = recipes[name]
    gens = r.get("generations")
    if gens is not None and generation not in gens:
        others = [k for k, v in recipes.items() if v.get("generations") is None]
        what = str(r["name"]).split(" (")[0]  # "MXFP8 block scaling"
        need = " or ".join(GENERATION_WORDS.get(g, g) for g in gens)
        gpu = f"the {accelerator_name}" if accelerator_name else "this accelerator"
        have = (f"{gpu} is {'an' if generation == 'ampere' else 'a'} {GENERATION_WORDS[generation]} GPU"
                if generation in GENERATION_WORDS else f"{gpu} is not one")
        raise ScenarioError("training.fp8_recipe", f"{what} needs {'an' if need[0] in 'AEIOU' else 'a'} {need} GPU; "
                                                   f"{have}; choose {' or '.join(others)} scaling")
    what = str(r["name"]).split(" (")[0]
    te_requirement("fp8_recipes", name, transformer_engine, "FP8 scaling recipe", what)
    cols = r["columnwise_copy"]
    columnwise = cols.get(generation, cols["default"])
    have = te_release(transformer_engine)
    if generation == "blackwell" and have is not None \
            and have < te_release(str(_table()["transformer_engine"]["non_tn_fp8_gemm"])):
        columnwise = cols.get("hopper", cols["default"])  # no FP8 GEMM in other layouts yet: transposed as on Hopper
    amax = float(r["amax_pass_bytes"])
    return Fp8Casts(recipe=name, cast=2.0 + 1.0 + amax + float(r["scale_bytes"]),
                    columnwise=float(columnwise), amax=amax,
                    norm_fusion=bool(r["norm_fusion"]), amax_in_norm=bool(r.get("amax_in_norm", False)),
                    gather_quantized=bool(r["gather_quantized"]),
                    norm_qkv="qkv" in fw.fp8_norm_fused, norm_fc1="fc1" in fw.fp8_norm_fused,
                    weight_cast_per_step=fw.fp8_weight_cast == "step", gemm_rate=float(r["gemm_rate"]),
                    scales=float(r["scale_bytes"]))


@lru_cache(maxsize=1)
def tp_overlap_terms() -> TpOverlap:
    t = _table()["tp_overlap"]
    return TpOverlap(sm_contention=float(t["sm_contention"]), reduce_scatter_splits=float(t["reduce_scatter_splits"]))
