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
from gpucluster_lib.scenario import ParallelismSpec
from gpucluster_lib.training.core import RC_CODES, RC_NAMES
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

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.data * self.context

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step per pipeline (gradient accumulation steps)."""
        return self.global_batch_size // (self.data * self.micro_batch_size)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def arrays(self) -> dict[str, np.ndarray]:
        """The plan as length-1 arrays for :func:`gpucluster_lib.training.core.evaluate`."""
        return {k: np.array([v]) for k, v in _codes(self).items()}

    def label(self) -> str:
        return (f"TP{self.tensor} PP{self.pipeline}" + (f"x{self.virtual_stages}" if self.virtual_stages > 1 else "")
                + f" DP{self.data}" + (f" CP{self.context}" if self.context > 1 else "")
                + (f" EP{self.expert}" if self.expert > 1 else "")
                + f" mb{self.micro_batch_size} {self.recompute}" + (f" ZeRO-{self.zero_stage}" if self.zero_stage else ""))


def _codes(p: Plan) -> dict[str, Any]:
    return {"tp": p.tensor, "pp": p.pipeline, "dp": p.data, "cp": p.context, "ep": p.expert,
            "mb": p.micro_batch_size, "gbs": p.global_batch_size, "vp": p.virtual_stages,
            "rc": RC_CODES[p.recompute], "sp": p.sequence_parallel, "zero": p.zero_stage,
            "dopt": p.distributed_optimizer}


def plan_from_codes(row: dict[str, Any]) -> Plan:
    return Plan(tensor=int(row["tp"]), pipeline=int(row["pp"]), data=int(row["dp"]), context=int(row["cp"]),
                expert=int(row["ep"]), virtual_stages=int(row["vp"]), micro_batch_size=int(row["mb"]),
                global_batch_size=int(row["gbs"]), recompute=RC_NAMES[int(row["rc"])],
                sequence_parallel=bool(row["sp"]), zero_stage=int(row["zero"]),
                distributed_optimizer=bool(row["dopt"]))


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def default_global_batch(seq_length: int, dp: int, mb: int) -> int:
    """About 4M tokens, rounded up to a multiple of ``dp x mb`` [sequences]."""
    unit = dp * mb
    target = max(1, round(DEFAULT_BATCH_TOKENS / seq_length))
    return unit * max(1, math.ceil(target / unit))


def _choices(values: list[int]) -> str:
    return ", ".join(str(v) for v in values[:16]) + (" ..." if len(values) > 16 else "")


def resolve_plan(spec: ParallelismSpec, arch: TransformerArch, gpus: int) -> Plan:
    """Complete and validate a user-written plan; raise :class:`ScenarioError` on bad input."""
    tp = spec.tensor or 1
    pp = spec.pipeline or 1
    cp = spec.context or 1
    ep = spec.expert or 1
    if arch.attention_heads % tp:
        raise ScenarioError("parallelism.tensor", f"{tp} does not divide attention_heads {arch.attention_heads}; "
                            f"valid: {_choices(divisors(arch.attention_heads))}")
    if arch.kv_heads % tp:
        raise ScenarioError("parallelism.tensor", f"{tp} does not divide kv_heads {arch.kv_heads}; "
                            f"valid: {_choices(divisors(arch.kv_heads))}")
    if arch.layers % pp:
        raise ScenarioError("parallelism.pipeline", f"{pp} does not divide layers {arch.layers}; "
                            f"valid: {_choices(divisors(arch.layers))}")
    if arch.seq_length % cp:
        raise ScenarioError("parallelism.context", f"{cp} does not divide seq_length {arch.seq_length}; "
                            f"valid: {_choices([c for c in divisors(arch.seq_length) if c <= 64])}")
    if gpus % (tp * pp * cp):
        raise ScenarioError("parallelism", f"{gpus} GPUs are not divisible by tensor x pipeline x context = "
                            f"{tp} x {pp} x {cp} = {tp * pp * cp}; change the plan or the GPU count")
    dp = spec.data or gpus // (tp * pp * cp)
    if tp * pp * dp * cp != gpus:
        raise ScenarioError("parallelism.data", f"tensor x pipeline x data x context = {tp} x {pp} x {dp} x {cp} = "
                            f"{tp * pp * dp * cp}, not the {gpus} GPUs of the cluster; use data: {gpus // (tp * pp * cp)}")
    if ep > 1:
        if not arch.is_moe:
            raise ScenarioError("parallelism.expert", f"{ep} needs a mixture-of-experts model; {arch.name} is dense (use 1)")
        if arch.num_experts % ep:
            raise ScenarioError("parallelism.expert", f"{ep} does not divide num_experts {arch.num_experts}; "
                                f"valid: {_choices(divisors(arch.num_experts))}")
        if (dp * cp) % ep:
            raise ScenarioError("parallelism.expert", f"{ep} does not divide data x context = {dp * cp} "
                                "(experts are sharded over the data-parallel ranks)")
    vp = spec.virtual_stages or 1
    if vp > 1 and pp == 1:
        raise ScenarioError("parallelism.virtual_stages", f"{vp} needs pipeline > 1 (interleaved 1F1B)")
    if (arch.layers // pp) % vp:
        raise ScenarioError("parallelism.virtual_stages", f"{vp} does not divide the {arch.layers // pp} layers per "
                            f"stage; valid: {_choices(divisors(arch.layers // pp))}")
    mb = spec.micro_batch_size or 1
    gbs = spec.global_batch_size or default_global_batch(arch.seq_length, dp, mb)
    if gbs % (dp * mb):
        raise ScenarioError("parallelism.global_batch_size",
                            f"{gbs} is not divisible by data x micro_batch_size = {dp} x {mb} = {dp * mb}; "
                            f"use a multiple of {dp * mb}, e.g. {dp * mb * max(1, round(gbs / (dp * mb)))}")
    sp = bool(spec.sequence_parallel) if spec.sequence_parallel is not None else tp > 1
    return Plan(tensor=tp, pipeline=pp, data=dp, context=cp, expert=ep, virtual_stages=vp, micro_batch_size=mb,
                global_batch_size=gbs, recompute=spec.recompute or "none", sequence_parallel=sp and tp > 1,
                zero_stage=spec.zero_stage if spec.zero_stage is not None else 0,
                distributed_optimizer=bool(spec.distributed_optimizer))


def enumerate_plans(spec: ParallelismSpec, arch: TransformerArch, gpus: int, tp_limit: int) -> dict[str, np.ndarray]:
    """Every valid plan for ``gpus`` GPUs, honouring the fields fixed in ``spec`` (arrays).

    Rules: TP divides the attention and KV heads and is at most ``tp_limit`` (the NVLink
    domain unless TP may span nodes); PP divides the layers; CP divides the sequence; DP =
    GPUs / (TP PP CP) is whole; EP divides the experts and DP x CP; the micro-batch divides the
    local batch; virtual stages divide the layers per stage (only with PP > 1); ZeRO-3 only
    without pipelining; sequence parallelism whenever TP > 1.
    """
    g = math.gcd(arch.attention_heads, arch.kv_heads)
    tps = [spec.tensor] if spec.tensor else [t for t in divisors(g) if t <= tp_limit]
    pps = [spec.pipeline] if spec.pipeline else divisors(arch.layers)
    cps = [spec.context] if spec.context else [c for c in CONTEXT_CHOICES if arch.seq_length % (2 * c) == 0]
    eps = [spec.expert] if spec.expert else ([e for e in divisors(arch.num_experts) if e <= 64] if arch.is_moe else [1])
    mbs = [spec.micro_batch_size] if spec.micro_batch_size else list(MICRO_BATCH_CHOICES)
    vps = [spec.virtual_stages] if spec.virtual_stages else list(VIRTUAL_STAGE_CHOICES)
    rcs = [RC_CODES[spec.recompute]] if spec.recompute else [0, 1, 2]
    zeros = [spec.zero_stage] if spec.zero_stage is not None else list(ZERO_CHOICES)
    grids = np.meshgrid(np.array(tps), np.array(pps), np.array(cps), np.array(eps), np.array(mbs), np.array(vps),
                        np.array(rcs), np.array(zeros), indexing="ij")
    tp, pp, cp, ep, mb, vp, rc, zero = (x.ravel().astype(np.int64) for x in grids)
    mp = tp * pp * cp
    ok = (gpus % mp) == 0
    dp = np.where(ok, gpus // np.maximum(mp, 1), 0)
    if spec.data:
        ok &= dp == spec.data
    ok &= dp >= 1
    ok &= ((dp * cp) % ep) == 0
    ok &= ((arch.layers // pp) % vp) == 0
    ok &= (vp == 1) | (pp > 1)
    ok &= ~((zero == 3) & (pp > 1))
    if spec.global_batch_size:
        gbs = np.full_like(tp, spec.global_batch_size)
    else:
        target = max(1, round(DEFAULT_BATCH_TOKENS / arch.seq_length))
        unit = np.maximum(dp * mb, 1)
        gbs = unit * np.maximum(1, -(-target // unit))
    ok &= (gbs % np.maximum(dp * mb, 1)) == 0
    if spec.global_batch_size:
        # interleaved schedules need the micro-batch count to be a multiple of PP (Megatron-LM)
        m = gbs // np.maximum(dp * mb, 1)
        ok &= (vp == 1) | ((m % pp) == 0)
    sp = tp > 1 if spec.sequence_parallel is None else np.full_like(tp, bool(spec.sequence_parallel)) & (tp > 1)
    dopt = np.full_like(tp, bool(spec.distributed_optimizer), dtype=bool)
    out = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "mb": mb, "gbs": gbs, "vp": vp, "rc": rc,
           "sp": np.asarray(sp, dtype=bool), "zero": zero, "dopt": dopt}
    return {k: v[ok] for k, v in out.items()}
