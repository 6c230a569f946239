"""Parallel plans: the dataclass, validation of a user plan, and enumeration for the search.

A plan splits ``gpus = tensor x pipeline x data x context`` (expert parallelism is carved
out of data parallelism, as in Megatron-Core). Validation of a plan the user wrote raises
:class:`ScenarioError` naming the field and the valid choices; the search only generates
valid plans.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.findings import Finding
from gpucluster_lib.formatting import stage_runs
from gpucluster_lib.scenario import ParallelismSpec
from gpucluster_lib.training.core import RC_CODES, RC_NAMES
from gpucluster_lib.training.framework import Framework
from gpucluster_lib.workloads.transformer import TransformerArch

#: Default global batch when the scenario gives none: about 4M tokens (Llama 2/3 use 4M,
#: Touvron 2023 Sec. 2.2), rounded up to a multiple of data-parallel size x micro-batch.
DEFAULT_BATCH_TOKENS = 4 * 2**20

MICRO_BATCH_CHOICES = (1, 2, 4, 8, 16)
VIRTUAL_STAGE_CHOICES = (1, 2, 4, 8)
CONTEXT_CHOICES = (1, 2, 4, 8)
ZERO_CHOICES = (0, 1, 2, 3)


@dataclass(frozen=True)
class Plan:
    """One parallel plan (scenario ``parallelism`` keys, all resolved)."""

    tensor: int
    pipeline: int
    data: int
    context: int = 1
    expert: int = 1
    virtual_stages: int = 1
    micro_batch_size: int = 1
    global_batch_size: int = 1
    recompute: str = "none"
    sequence_parallel: bool = False
    zero_stage: int = 0
    distributed_optimizer: bool = False
    tp_comm_overlap: bool = False
    #: Layers on each pipeline stage, first to last; None = equal stages.
    pipeline_layers: tuple[int, ...] | None = None

    def stage_layers(self, layers: int) -> tuple[int, ...]:
        """Layers on each pipeline stage for a model of ``layers`` layers."""
        if self.pipeline_layers is not None:
            return tuple(self.pipeline_layers)
        return (layers // self.pipeline,) * self.pipeline

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.data * self.context

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step per pipeline (gradient accumulation steps)."""
        return self.global_batch_size // (self.data * self.micro_batch_size)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pipeline_layers"] = list(self.pipeline_layers) if self.pipeline_layers is not None else None
        return d

    def arrays(self, layers: int | None = None) -> dict[str, np.ndarray]:
        """The plan as length-1 arrays for :func:`gpucluster_lib.training.core.evaluate`
        (``layers``: the model's layer count, needed for uneven stages)."""
        return {k: np.array([v]) for k, v in _codes(self, layers).items()}

    def label(self) -> str:
        uneven = ""
        if self.pipeline_layers is not None:
            st = self.pipeline_layers
            uneven = f" [{st[0]}/{st[1]}/../{st[-1]}]" if len(st) > 4 else " [" + "/".join(map(str, st)) + "]"
        return (f"TP{self.tensor} PP{self.pipeline}" + (f"x{self.virtual_stages}" if self.virtual_stages > 1 else "")
                + uneven + f" DP{self.data}" + (f" CP{self.context}" if self.context > 1 else "")
                + (f" EP{self.expert}" if self.expert > 1 else "")
                + f" mb{self.micro_batch_size} {self.recompute}" + (f" ZeRO-{self.zero_stage}" if self.zero_stage else "")
                + (" dist-opt" if self.distributed_optimizer and not self.zero_stage else "")
                + (" TP-overlap" if self.tp_comm_overlap else ""))


def describe(plan: Plan) -> str:
    """The plan in words, for findings and messages (``Plan.label`` is the compact form of tables):
    "TP 4, PP 2 with 10 model chunks per stage, DP 64, micro-batch 1, no recomputation, ZeRO-2, TP
    communication overlap"."""
    parts = [f"TP {plan.tensor}", f"PP {plan.pipeline}" + (f" with {plan.virtual_stages} model chunks per stage"
                                                           if plan.virtual_stages > 1 else "")]
    if plan.pipeline_layers is not None:
        parts[-1] += " (" + stage_runs(list(plan.pipeline_layers)) + ")"
    parts.append(f"DP {plan.data:,}")
    if plan.context > 1:
        parts.append(f"CP {plan.context}")
    if plan.expert > 1:
        parts.append(f"EP {plan.expert}")
    parts.append(f"micro-batch {plan.micro_batch_size}")
    parts.append({"none": "no recomputation", "selective": "selective recomputation",
                  "full": "full recomputation"}.get(plan.recompute, f"{plan.recompute} recomputation"))
    if plan.zero_stage:
        parts.append(f"ZeRO-{plan.zero_stage}")
    elif plan.distributed_optimizer:
        parts.append("distributed optimizer")
    if plan.tp_comm_overlap:
        parts.append("TP communication overlap")
    return ", ".join(parts)


def layout_codes(stages: tuple[int, ...] | list[int]) -> tuple[int, int, int, int]:
    """(first, last, largest middle, stage 1) layer counts of a stage layout."""
    st = list(stages)
    if len(st) == 1:
        return st[0], st[0], st[0], st[0]
    mid = st[1:-1]
    return st[0], st[-1], max(mid) if mid else st[-1], st[1]


def _codes(p: Plan, layers: int | None = None) -> dict[str, Any]:
    L = layers if layers is not None else (sum(p.pipeline_layers) if p.pipeline_layers else p.pipeline)
    lf, ll, lm, l1 = layout_codes(p.stage_layers(L)) if (p.pipeline_layers or layers is not None) else (None,) * 4
    out = {"tp": p.tensor, "pp": p.pipeline, "dp": p.data, "cp": p.context, "ep": p.expert,
           "mb": p.micro_batch_size, "gbs": p.global_batch_size, "vp": p.virtual_stages,
           "rc": RC_CODES[p.recompute], "sp": p.sequence_parallel, "zero": p.zero_stage,
           "dopt": p.distributed_optimizer, "tpo": int(p.tp_comm_overlap)}
    if lf is not None:
        out.update(lf=lf, ll=ll, lm=lm, l1=l1)
    return out


def plan_from_codes(row: dict[str, Any], layers: int | None = None) -> Plan:
    """A :class:`Plan` from one row of plan arrays (a search-table row); ``layers`` rebuilds
    an uneven stage layout from its first / middle / last counts."""
    pp = int(row["pp"])
    stages = None
    if layers is not None and "lf" in row and pp > 1:
        lf, ll, lm = int(row["lf"]), int(row["ll"]), int(row["lm"])
        even = layers // pp
        if not (layers % pp == 0 and lf == ll == lm == even):
            stages = _structured_layout(layers, pp, lf, ll)
    return Plan(tensor=int(row["tp"]), pipeline=pp, data=int(row["dp"]), context=int(row["cp"]),
                expert=int(row["ep"]), virtual_stages=int(row["vp"]), micro_batch_size=int(row["mb"]),
                global_batch_size=int(row["gbs"]), recompute=RC_NAMES[int(row["rc"])],
                sequence_parallel=bool(row["sp"]), zero_stage=int(row["zero"]),
                distributed_optimizer=bool(row["dopt"]), tp_comm_overlap=bool(int(row.get("tpo", 0))),
                pipeline_layers=stages)


def _structured_layout(layers: int, pp: int, first: int, last: int) -> tuple[int, ...]:
    """First and last stage fixed, the rest as even as possible (extra layers on the earliest middle stages)."""
    if pp == 1:
        return (layers,)
    if pp == 2:
        return (first, last)
    base, extra = divmod(layers - first - last, pp - 2)
    return (first, *([base + 1] * extra + [base] * (pp - 2 - extra)), last)


def balanced_layout(layers: int, pp: int, embedding_slot: bool = False, loss_slot: bool = False) -> tuple[int, ...]:
    """Split ``layers`` over ``pp`` stages as evenly as possible, counting the embedding and the
    loss as one slot of the first / last stage when asked (Megatron-Core
    ``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split``;
    BigScience BLOOM: 70 layers + 2 on 12 stages of 6). Stages that get one slot fewer are the
    first and last (they carry the embedding and the output layer), then the latest middle ones."""
    if pp == 1:
        return (layers,)
    slots = layers + int(embedding_slot) + int(loss_slot)
    base, extra = divmod(slots, pp)
    # which stages get base + 1 slots: middle stages first (earliest first), then the first, then the last
    order = list(range(1, pp - 1)) + [0, pp - 1]
    n = [base] * pp
    for i in order[:extra]:
        n[i] += 1
    n[0] -= int(embedding_slot)
    n[-1] -= int(loss_slot)
    return tuple(n)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def interleavings(stages: tuple[int, ...] | list[int], embedding_slot: bool = False,
                  loss_slot: bool = False) -> list[int]:
    """Model chunks per stage ``v`` (interleaved 1F1B) into which every stage of the layout splits
    evenly: ``v`` divides each stage's layer slots, which are its layers, plus one on the first stage
    when the layout counts the embedding as a slot (``embedding_slot``: ``embedding_in_pipeline_split``,
    or the search's slot layout) and one on the last when it counts the output layer and loss
    (``loss_slot``) [layers]. So ``v`` never exceeds a stage's slots.

    Megatron-Core builds ``layers / v`` layers in each chunk of a stage and refuses a layout that
    does not split so: ``get_num_layers_to_build`` asserts ``num_layers_per_pipeline_rank % vp_size
    == 0`` and ``TransformerConfig.__post_init__`` requires ``num_layers_in_first_pipeline_stage``,
    ``num_layers_in_last_pipeline_stage`` and the middle stages' layers to be divisible by the
    virtual pipeline size, and with ``account_for_embedding_in_pipeline_split`` /
    ``account_for_loss_in_pipeline_split`` the layers plus those slots per stage (Megatron-LM
    core_r0.11.0, megatron/core/transformer/transformer_block.py lines 47-150,
    megatron/core/transformer/transformer_config.py lines 597-704; the first virtual chunk of the
    first stage then builds one layer fewer, the last chunk of the last stage likewise). Releases
    before core_r0.11.0 refuse uneven stages with interleaving altogether (core_r0.10.0
    transformer_block.py: "Uneven number of layer not compatible with interleaved pipeline
    schedule"). Llama 3 405B's layout is of this kind: "the first model chunk on the first stage has
    only the embedding, and the last model chunk on the last stage has only output projection and
    loss calculation" (Llama Team 2024, arXiv:2407.21783, Sec. 3.3.2). Megatron-Core's free-form
    ``pipeline_model_parallel_layout`` (core_r0.13.0, megatron/core/transformer/
    pipeline_parallel_layer_layout.py) places any number of layers in each chunk: it runs equal
    chunks on stages of unequal middle layer counts too, and also unequal chunks, but the
    interleaved bubble of :func:`gpucluster_lib.training.core.pipeline_schedule`,
    ``(sum t_i - max t_i) / v``, charges each stage ``t_i / v`` per chunk, which holds for equal
    chunks only: layouts with unequal chunks on a stage are not modelled. A stage's layers count the embedding or the loss as a slot only when the layout
    does: Megatron-Core adds the slots only with the ``account_for_*_in_pipeline_split`` options, which it
    refuses together with explicit first- and last-stage layer counts (transformer_config.py, core_r0.11.0),
    so an equal split of 40 layers on 2 stages takes ``v`` dividing 40, not 41. Always includes 1.

    Llama 3 70B on 2 stages of 40 layers: 1, 2, 4, 5, 8, 10, 20, 40; with both slots counted (41 slots on
    each stage, ``balanced_layout(80, 2, True, True)`` = 40 + 40): 1 and 41."""
    st = list(stages)
    slots = [n + (int(embedding_slot) if i == 0 else 0) + (int(loss_slot) if i == len(st) - 1 else 0)
             for i, n in enumerate(st)]
    return [v for v in range(1, min(slots) + 1) if all(n % v == 0 for n in slots)]


def interleaved_micro_batches_ok(micro_batches, pp):
    """Whether Megatron-Core's interleaved schedule runs ``micro_batches`` per step on ``pp`` stages
    [bool, elementwise]: only a multiple of the pipeline stages. core_r0.8.0
    ``forward_backward_pipelining_with_interleaving`` raises "number of microbatches ... is not divisible by
    pipeline-model-parallel-size when using interleaved schedule" (megatron/core/pipeline_parallel/schedules.py
    line 614); from core_r0.10.0 its default ``microbatch_group_size_per_vp_stage`` (the pipeline size,
    model_parallel_config.py) refuses a remainder below the pipeline size ("The remainder of M (the total
    micro-batches) divided by N (number of contiguous micro-batches in a virtual pipeline stage) should be 0, or
    larger than or equal to the pipeline-parallel size"), i.e. any remainder. 6 micro-batches on 4 stages: no."""
    return (micro_batches % pp) == 0


def slot_flags(spec: ParallelismSpec) -> tuple[bool, bool]:
    """Whether the stage layout of ``spec`` counts the embedding and the output layer and loss as one layer
    slot of the first and the last stage: only a layout made from ``embedding_in_pipeline_split`` /
    ``loss_in_pipeline_split`` does, not one given as layer counts (Megatron-Core refuses its
    ``account_for_*_in_pipeline_split`` options beside explicit first- and last-stage counts)."""
    explicit = (spec.pipeline_layers is not None or spec.first_stage_layers is not None
                or spec.last_stage_layers is not None)
    return (bool(spec.embedding_in_pipeline_split) and not explicit,
            bool(spec.loss_in_pipeline_split) and not explicit)


def default_global_batch(seq_length: int, dp: int, mb: int, pp_interleaved: int = 1) -> int:
    """About 4M tokens, rounded up to a multiple of ``dp x mb`` [sequences], and of ``dp x mb x p`` for an
    interleaved plan of ``pp_interleaved`` = p stages (its micro-batches a multiple of p:
    :func:`interleaved_micro_batches_ok`)."""
    unit = dp * mb * pp_interleaved
    target = max(1, round(DEFAULT_BATCH_TOKENS / seq_length))
    return unit * max(1, math.ceil(target / unit))


def _choices(values: list[int]) -> str:
    return ", ".join(str(v) for v in values[:16]) + (" ..." if len(values) > 16 else "")


def resolve_plan(spec: ParallelismSpec, arch: TransformerArch, gpus: int,
                 default_tp_overlap: bool = False, nvlink_domain: int | None = None) -> Plan:
    """Complete and validate a user-written plan; raise :class:`ScenarioError` on bad input.

    ``nvlink_domain``: GPUs that share one NVLink fabric [GPUs]; TP communication overlap is
    refused when the tensor-parallel group is larger (:func:`tp_overlap_reach`) and the
    framework's default overlap is then off."""
    tp = spec.tensor or 1
    pp = spec.pipeline or (len(spec.pipeline_layers) if spec.pipeline_layers else 1)
    cp = spec.context or 1
    ep = spec.expert or 1
    _check_tensor(arch, tp)
    stages = resolve_layout(spec, arch.layers, pp)
    _check_context(arch, cp)
    if gpus % (tp * pp * cp):
        raise ScenarioError("parallelism", f"{gpus} GPUs are not divisible by tensor x pipeline x context = "
                            f"{tp} x {pp} x {cp} = {tp * pp * cp}; change the plan or the GPU count")
    dp = spec.data or gpus // (tp * pp * cp)
    if tp * pp * dp * cp != gpus:
        raise ScenarioError("parallelism.data", f"tensor x pipeline x data x context = {tp} x {pp} x {dp} x {cp} = "
                            f"{tp * pp * dp * cp}, not the {gpus} GPUs of the cluster; use a data parallelism of "
                            f"{gpus // (tp * pp * cp)}")
    _check_expert(arch, ep)
    if ep > 1:
        if (dp * cp) % ep:
            raise ScenarioError("parallelism.expert", f"{ep} does not divide data x context = {dp * cp} "
                                "(experts are sharded over the data-parallel ranks)")
    vp = spec.virtual_stages or 1
    if vp > 1 and pp == 1:
        raise ScenarioError("parallelism.virtual_stages", f"{vp} needs a pipeline of 2 or more stages (interleaved 1F1B)")
    if vp > 1:
        st = stages if stages is not None else (arch.layers // pp,) * pp
        emb, loss = slot_flags(spec)
        valid = interleavings(st, emb, loss)
        if vp not in valid:
            if stages is None and not (emb or loss):
                raise ScenarioError("parallelism.virtual_stages", f"{vp} does not divide the {arch.layers // pp} "
                                    f"layers per stage; valid: {_choices(valid)}")
            counts = f"{min(st)} to {max(st)}" if min(st) < max(st) else f"{st[0]}"
            slots = " and ".join(w for w, on in (("the embedding counting as one layer of the first stage", emb),
                                                 ("the output layer and loss as one of the last", loss)) if on)
            raise ScenarioError("parallelism.virtual_stages",
                                f"{vp} model chunks per stage need every stage's layers to split into {vp} equal "
                                f"chunks{', ' + slots if slots else ''}; stages of {counts} layers (first {st[0]}, "
                                f"last {st[-1]}) allow {_choices(valid)}; "
                                + ("choose one of those" if len(valid) > 1 else "use 1 (no interleaving)")
                                + f", or stages whose layers {vp} divides")
    mb = spec.micro_batch_size or 1
    gbs = spec.global_batch_size or default_global_batch(arch.seq_length, dp, mb, pp if vp > 1 else 1)
    if gbs % (dp * mb):
        raise ScenarioError("parallelism.global_batch_size",
                            f"{gbs} is not divisible by data parallelism x micro-batch size = {dp} x {mb} = {dp * mb}; "
                            f"use a multiple of {dp * mb}, e.g. {dp * mb * max(1, round(gbs / (dp * mb)))}"
                            + (f", or a micro-batch size that divides the {gbs // dp:,} sequences per data-parallel "
                               "rank" if gbs % dp == 0 and mb > 1 else ""))
    if vp > 1 and not interleaved_micro_batches_ok(gbs // (dp * mb), pp):
        raise _interleaved_batch_error(vp, pp, gbs, dp, mb)
    sp = bool(spec.sequence_parallel) if spec.sequence_parallel is not None else tp > 1
    tpo = bool(spec.tp_comm_overlap) if spec.tp_comm_overlap is not None else default_tp_overlap
    if spec.tp_comm_overlap and not (sp and tp > 1):
        raise _tp_overlap_error(tp == 1)
    if nvlink_domain is not None and tp > nvlink_domain:
        if spec.tp_comm_overlap:
            raise _tp_overlap_domain_error(tp, nvlink_domain)
        tpo = False
    return Plan(tensor=tp, pipeline=pp, data=dp, context=cp, expert=ep, virtual_stages=vp, micro_batch_size=mb,
                global_batch_size=gbs, recompute=spec.recompute or "none", sequence_parallel=sp and tp > 1,
                zero_stage=spec.zero_stage if spec.zero_stage is not None else 0,
                distributed_optimizer=bool(spec.distributed_optimizer), tp_comm_overlap=tpo and sp and tp > 1,
                pipeline_layers=stages)


def _check_tensor(arch: TransformerArch, tp: int) -> None:
    """A tensor parallelism must divide the attention heads and the KV heads (each rank holds whole heads)."""
    if arch.attention_heads % tp:
        raise ScenarioError("parallelism.tensor", f"{tp} does not divide the model's {arch.attention_heads} attention heads; "
                            f"valid: {_choices(divisors(arch.attention_heads))}")
    if arch.kv_heads % tp:
        raise ScenarioError("parallelism.tensor", f"{tp} does not divide the model's {arch.kv_heads} KV heads; "
                            f"valid: {_choices(divisors(arch.kv_heads))}")


def _check_context(arch: TransformerArch, cp: int) -> None:
    """A context parallelism must divide the sequence (each rank holds an equal share of the tokens)."""
    if arch.seq_length % cp:
        raise ScenarioError("parallelism.context", f"{cp} does not divide the sequence length of {arch.seq_length} tokens; "
                            f"valid: {_choices([c for c in divisors(arch.seq_length) if c <= 64])}")


def _check_expert(arch: TransformerArch, ep: int) -> None:
    """An expert parallelism above 1 needs a mixture-of-experts model whose experts it divides."""
    if ep > 1:
        if not arch.is_moe:
            raise ScenarioError("parallelism.expert", f"{ep} needs a mixture-of-experts model; {arch.name} is dense (use an "
                                "expert parallelism of 1)")
        if arch.num_experts % ep:
            raise ScenarioError("parallelism.expert", f"{ep} does not divide the model's {arch.num_experts} experts; "
                                f"valid: {_choices(divisors(arch.num_experts))}")


def framework_plan_problems(framework: Framework, pipeline: int, zero_stage: int, tp_overlap: bool = False,
                            dist_opt: bool = False, context: int = 1) -> list[tuple[str, str, str]]:
    """Why ``framework`` cannot run a plan of ``pipeline`` stages at ``zero_stage`` (with TP communication overlap
    when ``tp_overlap``, the distributed optimizer when ``dist_opt``), each as (field, message, fix); empty when it
    can: context parallelism on a framework without ring attention (``cp_path``: llm-foundry, which has none, and
    DeepSpeed, whose Ulysses split is not modelled; ``context``), TP overlap on a
    framework without one (``tp_overlap_path``: Megatron-DeepSpeed, llm-foundry); beside
    pipeline stages, a framework without a pipeline schedule (``pipeline_schedule``: llm-foundry / Composer), ZeRO-1,
    ZeRO-2 or a distributed optimizer where the framework shards with FSDP2 under torch.distributed.pipelining
    (``pipeline_zero3: step``, TorchTitan: ZeRO-3 or none), or a ZeRO stage above its ``pipeline_max_zero``
    (DeepSpeed's pipeline engine: ZeRO-1); data/training_frameworks.yaml gives the sources."""
    out = []
    if context > 1 and not framework.cp_path:
        out.append(("parallelism.context", f"{framework.name} has no ring-attention context parallelism (the kind "
                    f"modelled here), so a plan with a context parallelism of {context} cannot run there as "
                    "estimated", "use a context parallelism of 1, or a framework that has it (Megatron-LM, NeMo or "
                    "TorchTitan)"))
    if tp_overlap and not framework.tp_overlap_path:
        out.append(("parallelism.tp_comm_overlap",
                    f"{framework.name} has no TP communication overlap, so a plan with it cannot run there",
                    "turn the TP communication overlap off, or use a framework that has it (Megatron-LM, NeMo or "
                    "TorchTitan)"))
    if pipeline <= 1:
        return out
    if not framework.pipeline_schedule:
        out.append(("parallelism.pipeline",
                    f"{framework.name} has no pipeline schedule, so a plan of {pipeline} pipeline stages cannot run "
                    "there", "use a pipeline of 1 stage, or a framework with pipeline parallelism (Megatron-LM, NeMo, "
                    "DeepSpeed or TorchTitan)"))
    elif framework.pipeline_zero3 == "step" and (zero_stage in (1, 2) or dist_opt):
        out.append(("parallelism.zero_stage" if zero_stage else "parallelism.distributed_optimizer",
                    f"{framework.name} shards beside pipeline stages with FSDP2 only (ZeRO-3, gathered once a step, "
                    "or none), so " + (f"ZeRO-{zero_stage}" if zero_stage else "a distributed optimizer")
                    + f" with {pipeline} stages cannot run there",
                    "use ZeRO-3 or no sharding (ZeRO-0) with the pipeline, or a pipeline of 1 stage"))
    elif zero_stage > framework.pipeline_max_zero:
        out.append(("parallelism.zero_stage",
                    f"{framework.name} runs at most ZeRO-{framework.pipeline_max_zero} beside pipeline stages, so "
                    f"ZeRO-{zero_stage} with {pipeline} stages cannot run there",
                    f"lower the ZeRO stage to {framework.pipeline_max_zero}, or use a pipeline of 1 stage"))
    return out


def framework_plan_problem(framework: Framework, pipeline: int, zero_stage: int, tp_overlap: bool = False,
                           dist_opt: bool = False, context: int = 1) -> tuple[str, str, str] | None:
    """The first of :func:`framework_plan_problems`, or None."""
    problems = framework_plan_problems(framework, pipeline, zero_stage, tp_overlap, dist_opt, context)
    return problems[0] if problems else None


def check_fixed_values(spec: ParallelismSpec, arch: TransformerArch) -> None:
    """The plan search's fixed tensor, context and expert parallelism pass the explicit plan's checks
    (:func:`resolve_plan`): the search takes a fixed value as given, so a value the model cannot split
    by is refused with the explicit plan's message before the search."""
    if spec.tensor:
        _check_tensor(arch, spec.tensor)
    if spec.context:
        _check_context(arch, spec.context)
    if spec.expert:
        _check_expert(arch, spec.expert)


def _interleaved_batch_error(vp: int, pp: int, gbs: int, dp: int, mb: int) -> ScenarioError:
    unit = dp * mb * pp
    return ScenarioError("parallelism.virtual_stages",
                         f"{vp} model chunks per stage (the interleaved schedule) need the micro-batches per step to "
                         f"be a multiple of the {pp} pipeline stages, but a global batch of {gbs:,} sequences over "
                         f"data parallelism {dp} x micro-batch size {mb} gives {gbs // (dp * mb):,}; use a global "
                         f"batch that is a multiple of {unit:,} (data parallelism x micro-batch size x pipeline "
                         f"stages), e.g. {unit * max(1, round(gbs / unit)):,}, or no interleaving")


def _tp_overlap_error(tp_is_one: bool) -> ScenarioError:
    return ScenarioError("parallelism.tp_comm_overlap", "needs tensor parallelism with sequence parallelism "
                         "(Megatron pipelines the all-gather / reduce-scatter of the sequence-parallel layers "
                         "with the GEMMs); "
                         + ("raise the tensor parallelism to 2 or more" if tp_is_one else "turn sequence parallelism on")
                         + ", or turn the TP communication overlap off")


def _tp_overlap_domain_error(tp: int, domain: int) -> ScenarioError:
    return ScenarioError("parallelism.tp_comm_overlap",
                         f"needs the tensor-parallel group inside one NVLink domain (Transformer Engine's userbuffers "
                         f"run the overlapped collectives over NVLink only), but a tensor parallelism of {tp} spans "
                         f"NVLink domains of {domain} GPUs; lower the tensor parallelism to {domain} or less, or turn "
                         "the TP communication overlap off")


def tp_overlap_reach(nvlink_domain: int) -> int:
    """Largest tensor parallelism whose communication can be overlapped with its GEMMs [GPUs]:
    the NVLink domain.

    Megatron's ``--tp-comm-overlap`` is Transformer Engine's userbuffers overlap, which runs the
    tensor-parallel collectives as CUDA IPC / multicast copies over NVLink: "Tensor-parallel GPUs
    must be on a single node, and connected over NVLink/NVSwitch" (TransformerEngine
    examples/pytorch/comm_gemm_overlap/README.md, v2.2 to v2.18), "the comm+GEMM overlap is
    currently only possible with single-node tensor-parallelism ... there is currently no way to do
    this in Transformer Engine" for multi-node TP (github.com/NVIDIA/TransformerEngine/issues/1071, maintainer's
    comment of 2024-08-02); TE v2.2 registers the buffers over multi-node NVLink (github.com/NVIDIA/TransformerEngine/pull/1470,
    "Support for TP across multi-node NVLINK", GB200 NVL72), so the reach is the NVLink domain, not
    the node. A group beyond it cannot use the overlap: a plan that asks for it is refused, and its
    collectives are charged as Megatron's default schedule."""
    return nvlink_domain


#: The stage layout fields of ``parallelism``, in words.
LAYOUT_FIELDS = {"pipeline_layers": "layers of each pipeline stage", "first_stage_layers": "first stage's layers",
                 "last_stage_layers": "last stage's layers",
                 "embedding_in_pipeline_split": "embedding as a pipeline slot",
                 "loss_in_pipeline_split": "loss as a pipeline slot"}


def check_fixed_fields(spec: ParallelismSpec, layers: int, gpus: int, nvlink_domain: int | None = None,
                       framework: Framework | None = None) -> None:
    """Raise the message of the rule that leaves the plan search nothing to try (an empty plan
    space): a stage layout no pipeline size allows, TP overlap without TP and sequence
    parallelism or with a tensor-parallel group beyond the NVLink domain, an interleaved schedule whose
    fixed batch gives micro-batches that are not a multiple of the fixed pipeline, ZeRO-3 with a fixed
    pipeline, a fixed pipeline or ZeRO stage that ``framework`` cannot run. Returns when no single rule
    explains it."""
    fixed_pp = spec.pipeline or (len(spec.pipeline_layers) if spec.pipeline_layers is not None else None)
    if framework is not None:
        problem = framework_plan_problem(framework, fixed_pp or 1, spec.zero_stage or 0, bool(spec.tp_comm_overlap),
                                         bool(spec.distributed_optimizer), spec.context or 1)
        if problem is not None:
            field, message, fix = problem
            if field == "parallelism.pipeline" and not spec.pipeline:  # the stage count comes from the list
                field = "parallelism.pipeline_layers"
            raise ScenarioError(field, f"{message}; {fix}")
    layout = [k for k in LAYOUT_FIELDS if getattr(spec, k) not in (None, False)]
    if framework is not None and not framework.pipeline_schedule and layout:
        raise ScenarioError(f"parallelism.{layout[0]}", f"sets the {LAYOUT_FIELDS[layout[0]]}, but {framework.name} "
                            "has no pipeline schedule; remove it, or use a framework with pipeline parallelism "
                            "(Megatron-LM, NeMo, DeepSpeed or TorchTitan)")
    mb, gbs = spec.micro_batch_size, spec.global_batch_size
    if mb and gbs and gbs % mb:
        raise ScenarioError("parallelism.micro_batch_size", f"{mb} does not divide the global batch of {gbs:,} "
                            f"sequences; use a micro-batch size that divides it, at most {gbs:,}")
    fixed_mp = (spec.tensor or 1) * (fixed_pp or 1) * (spec.context or 1)
    if fixed_mp > 1 and gpus % fixed_mp:
        raise ScenarioError("parallelism", f"{gpus:,} GPUs are not divisible by the fixed tensor x pipeline x context "
                            f"parallelism, {spec.tensor or 1} x {fixed_pp or 1} x {spec.context or 1} = {fixed_mp}; "
                            f"change the plan or the GPU count (a multiple of {fixed_mp})")
    if spec.tp_comm_overlap and (spec.sequence_parallel is False or spec.tensor == 1):
        raise _tp_overlap_error(spec.tensor == 1)
    if framework is not None and not framework.zero3_tp_comm_overlap and spec.zero_stage == 3 \
            and spec.tp_comm_overlap:
        raise ScenarioError("parallelism.tp_comm_overlap", f"{framework.name} runs no TP communication overlap "
                            "beside ZeRO-3 (its performance scripts turn it off under Megatron-FSDP), so the plan "
                            "search has no plan with both; turn the TP communication overlap off, or lower the ZeRO "
                            "stage to 2 or less")
    if spec.tp_comm_overlap and spec.tensor and nvlink_domain is not None and spec.tensor > nvlink_domain:
        raise _tp_overlap_domain_error(spec.tensor, nvlink_domain)
    vp, gbs, dp, mb = spec.virtual_stages, spec.global_batch_size, spec.data, spec.micro_batch_size
    if vp and vp > 1 and fixed_pp and gbs and dp and mb and gbs % (dp * mb) == 0 \
            and not interleaved_micro_batches_ok(gbs // (dp * mb), fixed_pp):
        raise _interleaved_batch_error(vp, fixed_pp, gbs, dp, mb)
    if spec.zero_stage == 3 and fixed_pp is not None and fixed_pp > 1 \
            and (framework is None or framework.pipeline_zero3 != "step"):  # TorchTitan searches it (once a step)
        raise ScenarioError("parallelism.zero_stage", f"3 is left out of the plan search beside pipeline stages "
                            f"(ZeRO-3 re-gathers every parameter for each micro-batch), but the pipeline is fixed at "
                            f"{fixed_pp} stages; lower the ZeRO stage to 2 or less, use a pipeline of 1 stage, or "
                            "write the plan out in full (no automatic search)")
    if spec.pipeline_layers is not None or spec.first_stage_layers is not None or spec.last_stage_layers is not None \
            or spec.embedding_in_pipeline_split or spec.loss_in_pipeline_split:
        errors = []
        for pp in [fixed_pp] if fixed_pp is not None else [p for p in divisors(gpus) if p <= layers]:
            try:
                resolve_layout(spec, layers, pp)
            except ScenarioError as e:
                errors.append((pp == 1, e))
            else:
                return  # some pipeline size takes the layout: the layout is not the cause
        if errors:  # a pipeline's own message before the single stage's ("has a single stage")
            raise min(errors, key=lambda pe: pe[0])[1]


def resolve_layout(spec: ParallelismSpec, layers: int, pp: int) -> tuple[int, ...] | None:
    """Layers per pipeline stage from ``pipeline_layers``, ``first_stage_layers`` /
    ``last_stage_layers`` or the embedding/loss slot flags; None when the stages are equal.

    When ``pipeline`` does not divide the layers and no layout is given, the balanced split
    (:func:`balanced_layout`) is used; :func:`layout_findings` reports it.
    """
    if spec.pipeline_layers is not None:
        if spec.first_stage_layers is not None or spec.last_stage_layers is not None:
            raise ScenarioError("parallelism.pipeline_layers", "gives every stage's layers, so the first and last "
                                "stages' layer counts cannot be set as well; keep one or the other")
        st = [int(x) for x in spec.pipeline_layers]
        if len(st) != pp:
            raise ScenarioError("parallelism.pipeline_layers", f"gives {len(st)} stages but the pipeline has {pp}; "
                                f"list one layer count per stage")
        if any(x < 0 for x in st) or sum(st) != layers:
            raise ScenarioError("parallelism.pipeline_layers", f"must be non-negative counts adding up to the model's "
                                f"{layers} layers; they add up to {sum(st)}")
        if 0 in st:
            raise ScenarioError("parallelism.pipeline_layers", f"gives stage {st.index(0) + 1} of {pp} no layers; "
                                "every stage needs at least one layer (use fewer pipeline stages)")
        return None if len(set(st)) == 1 else tuple(st)
    first, last = spec.first_stage_layers, spec.last_stage_layers
    if first is not None or last is not None:
        field = "parallelism.first_stage_layers" if first is not None else "parallelism.last_stage_layers"
        if pp == 1:
            raise ScenarioError(field, "sets the layers of one pipeline stage, but the pipeline has a single stage; "
                                "raise the pipeline parallelism to 2 or more, or remove it")
        fixed = (first or 0) + (last or 0)
        free = [i for i, v in ((0, first), (pp - 1, last)) if v is None] + list(range(1, pp - 1))
        given = " and ".join(f"{v} on the {w} stage" for w, v in (("first", first), ("last", last)) if v is not None)
        if fixed > layers:
            raise ScenarioError(field, f"{given} is more than the model's {layers} layers; lower it")
        if not free and fixed != layers:
            raise ScenarioError(field, f"with {pp} stages the first and last stages hold every layer, but {given} "
                                f"add up to {fixed}, not the model's {layers}; make them add up to {layers}")
        if 0 in (first, last):
            field = "parallelism.first_stage_layers" if first == 0 else "parallelism.last_stage_layers"
            raise ScenarioError(field, "is 0, but every pipeline stage needs at least one layer; give 1 or more, "
                                "or remove it")
        if free and layers - fixed < len(free):
            which = "the first and last stages together" if first is not None and last is not None else "it"
            raise ScenarioError(field, f"{given} leaves a stage with no layers; each of the {pp} stages needs at "
                                f"least one layer, so {which} may hold at most {layers - len(free)}")
        st = [0] * pp
        if first is not None:
            st[0] = first
        if last is not None:
            st[-1] = last
        if free:  # with 2 stages both counts given, nothing is left to spread
            base, extra = divmod(layers - fixed, len(free))
            for k, i in enumerate(sorted(free, key=lambda i: (i in (0, pp - 1), i))):  # middle stages get the extra
                st[i] = base + (1 if k < extra else 0)
        return None if len(set(st)) == 1 else tuple(st)
    if pp > layers + int(spec.embedding_in_pipeline_split) + int(spec.loss_in_pipeline_split):
        raise ScenarioError("parallelism.pipeline", f"{pp} stages for {layers} layers leaves stages empty; "
                            f"use at most {layers}")
    st = balanced_layout(layers, pp, spec.embedding_in_pipeline_split, spec.loss_in_pipeline_split)
    return None if len(set(st)) == 1 else st


def layout_findings(spec: ParallelismSpec, layers: int, plan: Plan) -> list[Finding]:
    """An info finding when the stage layout was chosen here (pipeline does not divide the layers); a warning
    when the embedding / loss slot flags are not read (beside explicit layer counts, or on one stage); an info
    finding when they are read but Megatron-Core's options would refuse the split (below)."""
    flags = [w for w, on in (("embedding_in_pipeline_split", spec.embedding_in_pipeline_split),
                             ("loss_in_pipeline_split", spec.loss_in_pipeline_split)) if on]
    explicit = spec.pipeline_layers is not None or spec.first_stage_layers is not None \
        or spec.last_stage_layers is not None
    if flags and (explicit or plan.pipeline == 1):
        why = ("the stage layer counts are given (Megatron-Core refuses its embedding and loss options beside "
               "explicit first- and last-stage counts)" if explicit else "the pipeline has a single stage")
        words = {"embedding_in_pipeline_split": "the embedding", "loss_in_pipeline_split": "the output layer and loss"}
        names = " and ".join(words[f] for f in flags)
        return [Finding("training-setting-ignored", "warning", f"{names} counted as a pipeline layer: ignored, as {why}",
                        fix="remove it, or the stage layer counts" if explicit else "remove it",
                        field=f"parallelism.{flags[0]}")]
    if flags:
        # Megatron-Core's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split need the
        # layers plus those slots divisible by the pipeline size (TransformerConfig.__post_init__, core_r0.11.0
        # transformer_config.py); BigScience's BLOOM layout (70 + 2 on 12) is of that kind
        slots = layers + len(flags)
        if slots % plan.pipeline:
            st = plan.stage_layers(layers)
            return [Finding("training-pipeline-slots-uneven", "info",
                            f"{layers} layers and {len(flags)} embedding / loss slot{'s' if len(flags) > 1 else ''} "
                            f"make {slots}, which {plan.pipeline} stages do not divide: the split used "
                            f"({'/'.join(map(str, st))} layers) is one Megatron-Core's embedding and loss options "
                            "refuse; its free-form pipeline layout (Megatron-Core 0.13) runs it",
                            fix="give the layers of every stage, or a pipeline size that divides the layers and "
                                "slots", field="parallelism.pipeline")]
        return []
    if plan.pipeline_layers is None or explicit:
        return []
    st = plan.pipeline_layers
    return [Finding("training-pipeline-uneven-split", "info",
                    f"a pipeline of {plan.pipeline} stages does not divide the {layers} layers: balanced split with "
                    f"{min(st)} to {max(st)} layers per stage (first {st[0]}, last {st[-1]})",
                    fix="give the layers of every pipeline stage, or of the first or last stage, or use a "
                        "pipeline parallelism that divides the layers", field="parallelism.pipeline")]


def _expand(cols: dict[str, np.ndarray], name: str, values) -> dict[str, np.ndarray]:
    """Cartesian product of the rows of ``cols`` with ``values`` as a new column ``name``."""
    values = np.asarray(values)
    n = len(next(iter(cols.values()))) if cols else 1
    out = {c: np.repeat(v, len(values)) for c, v in cols.items()}
    out[name] = np.tile(values, n)
    return out


def _keep(cols: dict[str, np.ndarray], ok: np.ndarray) -> dict[str, np.ndarray]:
    return {c: v[ok] for c, v in cols.items()}


#: Largest micro-batch the search tries [sequences] (published runs use 1-16).
MAX_MICRO_BATCH = 64


def pipeline_options(spec: ParallelismSpec, layers: int,
                     pp: int) -> list[tuple[tuple[int, ...], bool, bool]]:
    """Stage layouts the search tries for ``pp`` stages, each with whether it counts the embedding and the
    loss as a slot of the first / last stage (:func:`slot_flags`, read by :func:`interleavings`): the given
    layout, else the equal or balanced split and the split that counts the embedding and the loss as slots."""
    if spec.pipeline_layers is not None or spec.first_stage_layers is not None or spec.last_stage_layers is not None \
            or spec.embedding_in_pipeline_split or spec.loss_in_pipeline_split:
        try:
            st = resolve_layout(spec, layers, pp)
        except ScenarioError:
            return []
        return [(st if st is not None else (layers // pp,) * pp, *slot_flags(spec))]
    if pp > layers:
        return []
    out = [(balanced_layout(layers, pp), False, False)]
    if pp > 2 and not spec.pipeline:  # a fixed pipeline size keeps the default split
        alt = balanced_layout(layers, pp, True, True)
        if min(alt) > 0:  # also when it is the same split: its slots allow other interleavings (126 on 16)
            out.append((alt, True, True))
    return out


def enumerate_plans(spec: ParallelismSpec, arch: TransformerArch, gpus: int, tp_limit: int,
                    nvlink_domain: int | None = None) -> dict[str, np.ndarray]:
    """Every valid plan for ``gpus`` GPUs, honouring the fields fixed in ``spec`` (arrays).

    Dimensions: TP divides the attention and KV heads and is at most ``tp_limit`` (the NVLink
    domain unless TP may span nodes); PP is any stage count that leaves DP whole, with the
    equal split when it divides the layers, else the balanced split, plus the split that
    counts embedding and loss as slots; CP divides the sequence; EP divides the experts and
    DP x CP; every micro-batch that divides the local batch (up to ``MAX_MICRO_BATCH``);
    every interleaving into which each stage's layers split evenly (:func:`interleavings`; only
    with PP > 1);
    recomputation none / selective / full; ZeRO 0-3 (ZeRO-3 only without pipelining);
    Megatron's distributed optimizer on / off (ZeRO 0); TP communication overlap on / off
    (TP > 1 with sequence parallelism, inside the NVLink domain ``nvlink_domain``:
    :func:`tp_overlap_reach`); sequence parallelism on / off (TP > 1).
    """
    return plan_space(spec, arch, gpus, tp_limit, nvlink_domain).plans()


@dataclass(frozen=True)
class PlanSpace:
    """Every valid plan of a search as a pair (base row, switch row), not expanded.

    ``base``: TP, PP with its stage layout (``lf``, ``ll``, ``lm``, ``l1``) and interleaving
    (``vp``), DP, CP, EP, micro-batch and global batch, one row per combination (length
    ``nb``); ``switches``: recomputation, ZeRO stage, distributed optimizer, sequence
    parallelism and TP overlap (length ``ns``); ``allowed[i, j]``: whether switch row ``j`` is
    valid with base row ``i``. The plans in enumeration order are the allowed pairs in
    row-major order (:meth:`plans`).
    """

    base: dict[str, np.ndarray]
    switches: dict[str, np.ndarray]
    allowed: np.ndarray

    @property
    def size(self) -> int:
        """Valid plans [plans]."""
        return int(np.count_nonzero(self.allowed))

    def plans(self, ib: np.ndarray | None = None, js: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Plan arrays (:data:`_KEYS`) of the pairs (``ib[k]``, ``js[k]``), all valid ones in
        enumeration order when omitted."""
        if ib is None or js is None:
            ib, js = np.nonzero(self.allowed)
        b, w = self.base, self.switches
        tp = b["tp"][ib]
        return {"tp": tp, "pp": b["pp"][ib], "dp": b["dp"][ib], "cp": b["cp"][ib], "ep": b["ep"][ib],
                "mb": b["mb"][ib], "gbs": b["gbs"][ib], "vp": b["vp"][ib], "rc": w["rc"][js],
                "sp": w["sp"][js] & (tp > 1), "zero": w["zero"][js], "dopt": w["dopt"][js], "tpo": w["tpo"][js],
                "lf": b["lf"][ib], "ll": b["ll"][ib], "lm": b["lm"][ib], "l1": b["l1"][ib]}


@dataclass(frozen=True)
class PlanCaps:
    """What a training framework runs, as the plan search reads it (the framework's terms,
    data/training_frameworks.yaml, which gives the sources); the defaults offer every plan the engine models.

    ``zero3_tp_overlap`` false: no plan with ZeRO-3 and TP communication overlap (NeMo's performance scripts turn TP
    overlap off with Megatron-FSDP and TP > 1). ``pipeline_schedule`` false: no pipeline stages (llm-foundry /
    Composer). ``pipeline_max_zero``: the highest ZeRO stage beside pipeline stages (DeepSpeed's pipeline engine:
    1). ``tp_overlap`` false: no plan with TP communication overlap (Megatron-DeepSpeed, llm-foundry).
    ``tensor_parallel`` false: TP 1 unless fixed (llm-foundry splits the FFN only, which the engine does not
    model). ``context_parallel`` false: CP 1 unless fixed (llm-foundry, DeepSpeed). ``pipeline_zero3_step``: beside
    pipeline stages the framework shards with FSDP2 only, gathered once a step (TorchTitan: ZeRO-3 or ZeRO-0
    there, no ZeRO-1, ZeRO-2 or distributed optimizer)."""

    zero3_tp_overlap: bool = True
    pipeline_schedule: bool = True
    pipeline_max_zero: int = 3
    tp_overlap: bool = True
    pipeline_zero3_step: bool = False
    tensor_parallel: bool = True
    context_parallel: bool = True

    @classmethod
    def of(cls, fw: Framework) -> PlanCaps:
        """The caps of framework ``fw``."""
        return cls(zero3_tp_overlap=fw.zero3_tp_comm_overlap, pipeline_schedule=fw.pipeline_schedule,
                   pipeline_max_zero=fw.pipeline_max_zero, tp_overlap=fw.tp_overlap_path,
                   pipeline_zero3_step=fw.pipeline_zero3 == "step", tensor_parallel=fw.tp_scope == "layer",
                   context_parallel=fw.cp_path)


def plan_space(spec: ParallelismSpec, arch: TransformerArch, gpus: int, tp_limit: int,
               nvlink_domain: int | None = None, caps: PlanCaps = PlanCaps()) -> PlanSpace:
    """The valid plans of :func:`enumerate_plans` as base rows and switch rows (:class:`PlanSpace`), only those
    the framework runs (``caps``: :class:`PlanCaps`). Where the framework gathers ZeRO-3 per micro-batch, ZeRO-3
    beside pipeline stages is left out: it moves every parameter for each micro-batch, more traffic than the
    pipeline saves."""
    zero3_tp_overlap, pipeline_schedule, pipeline_max_zero = caps.zero3_tp_overlap, caps.pipeline_schedule, \
        caps.pipeline_max_zero
    tp_overlap, pipeline_zero3_step = caps.tp_overlap, caps.pipeline_zero3_step
    tensor_parallel, context_parallel = caps.tensor_parallel, caps.context_parallel
    L = arch.layers
    g = math.gcd(arch.attention_heads, arch.kv_heads)
    tps = [spec.tensor] if spec.tensor else [t for t in divisors(g) if t <= tp_limit and (tensor_parallel or t == 1)]
    cps = [spec.context] if spec.context else [c for c in CONTEXT_CHOICES if arch.seq_length % (2 * c) == 0]
    if not context_parallel:  # none beside a fixed context parallelism: check_fixed_fields says why
        cps = [c for c in cps if c == 1]
    eps = [spec.expert] if spec.expert else ([e for e in divisors(arch.num_experts) if e <= 64] if arch.is_moe else [1])
    rcs = [RC_CODES[spec.recompute]] if spec.recompute else [0, 1, 2]
    zeros = [spec.zero_stage] if spec.zero_stage is not None else list(ZERO_CHOICES)

    # pipeline rows: (pp, lf, ll, lm, l1, vp)
    pps = [spec.pipeline] if spec.pipeline else [p for p in divisors(gpus) if p <= L]
    if not pipeline_schedule:
        pps = [p for p in pps if p == 1]
    rows = []
    for p in pps:
        for st, emb, loss in pipeline_options(spec, L, p):
            lf, ll, lm, l1 = layout_codes(st)
            # chunks into which every stage's slots split evenly (as resolve_plan accepts)
            vps = [1] if p == 1 else interleavings(st, emb, loss)
            if spec.virtual_stages:
                vps = [v for v in vps if v == spec.virtual_stages]
            for v in vps:
                if (p, lf, ll, lm, l1, v) not in rows:  # one layout may come with and without slots
                    rows.append((p, lf, ll, lm, l1, v))
    pipe = np.array(rows, dtype=np.int64).reshape(-1, 6)

    cols = _expand({}, "tp", tps)
    cols = _expand(cols, "cp", cps)
    cols = _expand(cols, "pipe", np.arange(len(pipe)))
    pp = pipe[cols["pipe"], 0]
    mp = cols["tp"] * pp * cols["cp"]
    ok = (gpus % mp) == 0
    cols = _keep(cols, ok)
    pp = pipe[cols["pipe"], 0]
    cols["dp"] = gpus // (cols["tp"] * pp * cols["cp"])
    if spec.data:
        cols = _keep(cols, cols["dp"] == spec.data)
    cols = _expand(cols, "ep", eps)
    cols = _keep(cols, ((cols["dp"] * cols["cp"]) % cols["ep"]) == 0)

    # micro-batch and global batch
    if spec.micro_batch_size:
        mbs = [spec.micro_batch_size]
    elif spec.global_batch_size:
        mbs = [d for d in divisors(spec.global_batch_size) if d <= MAX_MICRO_BATCH]
    else:
        mbs = list(MICRO_BATCH_CHOICES)
    cols = _expand(cols, "mb", mbs)
    dpmb = cols["dp"] * cols["mb"]
    if spec.global_batch_size:
        cols["gbs"] = np.full_like(dpmb, spec.global_batch_size)
        cols = _keep(cols, (cols["gbs"] % dpmb) == 0)
        pp = pipe[cols["pipe"], 0]
        vp = pipe[cols["pipe"], 5]
        m = cols["gbs"] // (cols["dp"] * cols["mb"])
        cols = _keep(cols, (vp == 1) | interleaved_micro_batches_ok(m, pp))
    else:  # default_global_batch: an interleaved plan's micro-batches a multiple of PP (interleaved_micro_batches_ok)
        target = max(1, round(DEFAULT_BATCH_TOKENS / arch.seq_length))
        pp, vp = pipe[cols["pipe"], 0], pipe[cols["pipe"], 5]
        unit = dpmb * np.where(vp > 1, pp, 1)
        cols["gbs"] = unit * np.maximum(1, -(-target // unit))

    # the remaining switches as one table of valid combinations, expanded once
    dopts = [bool(spec.distributed_optimizer)] if spec.distributed_optimizer is not None else [False, True]
    sps = [bool(spec.sequence_parallel)] if spec.sequence_parallel is not None else [True, False]
    tpos = [bool(spec.tp_comm_overlap)] if spec.tp_comm_overlap is not None else [False, True]
    if not tp_overlap:  # the framework has none: a fixed overlap leaves nothing (check_fixed_fields says why)
        tpos = [o for o in tpos if not o]
    both_fixed = spec.distributed_optimizer is not None and spec.zero_stage is not None  # the user's pair, as given
    opts = np.array([(r, z, d, q, o) for r in rcs for z in zeros for d in dopts for q in sps for o in tpos
                     if not (d and z > 0 and not both_fixed)  # ZeRO >= 1 already shards the optimizer states
                     and not (o and not q)], dtype=np.int64).reshape(-1, 5)  # TP overlap needs sequence parallelism
    prow = pipe[cols.pop("pipe")]
    base = {"tp": cols["tp"], "pp": prow[:, 0], "dp": cols["dp"], "cp": cols["cp"], "ep": cols["ep"],
            "mb": cols["mb"], "gbs": cols["gbs"], "vp": prow[:, 5], "lf": prow[:, 1], "ll": prow[:, 2],
            "lm": prow[:, 3], "l1": prow[:, 4]}
    switches = {"rc": opts[:, 0], "zero": opts[:, 1], "dopt": opts[:, 2].astype(bool), "sp": opts[:, 3].astype(bool),
                "tpo": opts[:, 4]}
    staged = base["pp"][:, None] > 1
    if pipeline_zero3_step:  # FSDP2 under torch.distributed.pipelining: ZeRO-3 (once a step) or none
        allowed = ~(((switches["zero"][None, :] == 1) | (switches["zero"][None, :] == 2)
                     | switches["dopt"][None, :]) & staged)
    else:
        allowed = ~((switches["zero"][None, :] == 3) & staged)  # ZeRO-3 only without pipelining
    allowed &= ~((switches["zero"][None, :] > pipeline_max_zero) & (base["pp"][:, None] > 1))
    # TP 1: one row, no SP, no TP overlap
    allowed &= (base["tp"][:, None] > 1) | ((opts[:, 3] == sps[0]) & (opts[:, 4] == 0))[None, :]
    if not zero3_tp_overlap:  # the framework runs no TP overlap beside ZeRO-3
        allowed &= ~((opts[:, 1] == 3) & (opts[:, 4] == 1))[None, :]
    if nvlink_domain is not None:  # TP overlap only inside the NVLink domain
        allowed &= ~((base["tp"][:, None] > tp_overlap_reach(nvlink_domain)) & (opts[:, 4] == 1)[None, :])
    for v in (*base.values(), *switches.values(), allowed):
        v.flags.writeable = False  # a search may keep the space for the next one
    return PlanSpace(base, switches, allowed)


_KEYS = ("tp", "pp", "dp", "cp", "ep", "mb", "gbs", "vp", "rc", "sp", "zero", "dopt", "tpo", "lf", "ll", "lm", "l1")
