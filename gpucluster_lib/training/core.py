"""Vectorised step-time and memory model of one training step (numpy).

:func:`evaluate` takes a :class:`Context` (model, hardware, efficiency: scalars) and a set
of parallel plans as numpy arrays of equal length (``tp``, ``pp``, ``dp``, ``cp``, ``ep``,
``mb``, ``gbs``, ``vp``, ``rc`` 0/1/2 = none/selective/full, ``sp``, ``zero``, ``dopt``),
and returns arrays of step time, its breakdown and the memory per GPU. The plan search
evaluates thousands of plans in one call; a single estimate is the same call with arrays
of length one, so both use exactly the same physics.

Model (per GPU, per micro-batch, bottleneck pipeline stage)
----------------------------------------------------------
* GEMMs: for each projection, ``t = max(2MKN / (P e_g s(M, N, K)), 2(MK+KN+MN) / (B e_m))``
  (roofline, [1]) with ``e_g`` the generation's large-GEMM fraction of the dense peak ``P`` of
  the training precision and ``s`` the shape factor of the GEMM efficiency curve in m, n, k
  (:mod:`gpucluster_lib.calibration.gemm`: saturating per dimension plus a fixed time per
  GEMM, fitted to measured H100 GEMMs), so that small GEMMs are not charged the large-GEMM
  rate; backward = 2 x forward; full recomputation adds a forward [2], which with checkpoint
  early stop (the framework's ``checkpoint_early_stop``, ``training.checkpoint_early_stop``) ends
  at the last tensor saved for the backward [14]: in a dense block that is the input of the FFN
  output projection (MPT: the GELU output; SwiGLU: the gated product), so that GEMM (a GELU
  block: 8h^2 of its 24h^2 GEMM FLOPs per token, a third of the GEMMs; SwiGLU: w2, one of its
  three FFN GEMMs), the dropout-residual-add after it (7 of the 22 element-wise
  bytes per hidden element) and, with TP, the collective after it are not rerun. MoE layers
  rerun their FFN whole: the routed combine (outputs times router weights) saves the experts'
  outputs for the router's gradient, so the last saved tensor comes after the expert GEMMs.
  Selective recomputation reruns the attention core (Megatron-LM; free with a fused kernel, which
  recomputes internally) or, with TorchTitan's op-level policy, every second matmul of the block's
  forward: K, the output projection and w3 of a Llama block (:func:`every_second_mm_s`, [25]).
* FP8 training (precision fp8): the GEMMs at ``e_g f_8`` of the FP8 peak (``f_8`` = ``fp8_gemm_factor``,
  the FP8 kernels' share of the 16-bit efficiency measured in one harness, times the recipe's kernel rate),
  the output layer at the 16-bit rate (no framework here runs it in FP8), and the casts to FP8 as memory
  traffic at HBM speed [21]: per FP8 GEMM the input (forward) and the output gradient (backward), each
  ``2 + 1 + c + a + s`` bytes per element of the 16-bit tensor (read it, write the FP8 copy, the
  column-wise copy c: 1 on Hopper, 0 on Blackwell for per-tensor scales; a separate amax pass a: 2 with
  current scaling; block scales s: 1/16 with MXFP8), except an input the norm writes (Megatron-Core's QKV
  and FC1 with delayed scaling: -1 forward, 2 c backward) and, with sequence parallelism, the tensors
  gathered over TP, cast on the 1/t shard (``3 / t + 2 c``); the weights at ``2 + 1 + c + a + s`` bytes per
  element once per global batch (Megatron-Core) or every micro-batch (``fp8_cast_bytes``,
  ``fp8_weight_cast_s``; data/training_frameworks.yaml ``fp8_recipes``, ``training.fp8_recipe``).
* Attention core: fused (``training.attention_kernel``: FlashAttention-2, llm-foundry's Triton
  FlashAttention, cuDNN fused attention; by default the framework's kernel for the GPU generation,
  data/training_frameworks.yaml: Transformer Engine, hence Megatron-Core and NeMo, runs cuDNN on
  Hopper and Blackwell [22]) over the causal half, backward 2.5x, at ``e_k s / (s + s_k)`` of the
  16-bit peak for a sequence of s tokens: the s^2 work at the kernel's asymptotic rate ``e_k`` plus a
  cost per query block linear in s, so that the rate is half its asymptote at ``s_k`` tokens (both per
  kernel and GPU generation, fitted to the kernel's published benchmark, data/efficiency.yaml) [5,
  23]; or unfused: batched GEMMs plus the s x s score traffic at memory bandwidth [3].
* Element-wise (norms, dropout, residuals, activation): bytes at memory bandwidth; the
  norm/residual part is split by TP only with sequence parallelism [3]; a hidden dropout of 0 writes
  and reads no dropout mask (``elementwise_terms``: 20 of the 22 bytes per hidden element). The
  attention dropout is not read: the unfused attention's bytes per score are a fitted value.
* Output layer and loss (last stage): the logits GEMM at the 16-bit rate and the cross-entropy as
  ``x`` bytes per logit of the GPU's vocabulary shard at memory bandwidth, ``x`` the framework's count
  from its loss code (data/training_frameworks.yaml ``cross_entropy_losses``: Megatron-LM's unfused
  vocab-parallel cross-entropy 52 = forward 38 + backward 14; Megatron-Core's torch.compile'd fused loss
  40 = 22 + 18, NeMo's default; flash-attn 1.0.9's xentropy kernel 8, llm-foundry; F.cross_entropy
  under torch.compile 8, TorchTitan; Transformer Engine's Triton kernel 10, the Megatron-Bridge
  performance runs) or data/efficiency.yaml's generic value.
* Tensor parallel, per layer and micro-batch, each all-gather / reduce-scatter ``c`` of the
  layer activation (ring ``(t-1)/t S / B + (t-1) alpha`` [6]) paired with the GEMM ``g`` next
  to it [2, 3, 8]:
  - Megatron default (``tp_comm_overlap`` off): the 4 forward collectives are exposed; in
    backward the column-parallel (QKV, FC1) reduce-scatter runs behind the weight-gradient
    GEMM and the input re-gather behind the data-gradient GEMM (exposed ``max(0, c - g)``),
    the row-parallel (proj, FC2) gradient all-gathers are exposed. Without sequence
    parallelism the backward all-reduce ``2c`` runs behind the weight-gradient GEMM.
  - ``tp_comm_overlap`` on (Transformer Engine userbuffers): every collective is pipelined
    with its GEMM in chunks, exposed ``max(0, c - g) + c / n`` (n = t for the ring-exchange
    all-gather, 4 for the pipelined reduce-scatter) [9].
  Hidden communication costs ``kappa min(c, g)`` of GEMM time (SM contention) [9]. Full
  recomputation repeats the forward collectives. Context parallel: ring exchange of K/V [7];
  expert parallel: 2 all-to-alls forward, 2 backward.
* Pipeline (uneven stages): stage i runs ``t_i = phi (n_i t_layer + [i=0] t_emb +
  [i=p-1] t_out + t_p2p)`` per micro-batch (``phi`` the framework's pipeline-slot factor);
  1F1B step ``T = (m - 1) max t_i + sum t_i`` [2, 10]; interleaved with v chunks
  ``T = m max t_i + (sum t_i - max t_i) / v``, which is Narayanan's ``t (m + (p-1)/v)`` for
  equal stages [2] and the 1F1B form for v = 1. With the interleaved schedule's point-to-point overlap
  (the framework's ``overlap_p2p_comm``, ``parallelism.overlap_p2p_comm``) the steady state's ``2 v`` transfers
  per micro-batch run behind the other direction's chunks: a forward chunk's transfer ``x`` behind a backward
  chunk (``2/3`` of the stage's compute ``c`` over ``v``), a backward chunk's behind a forward chunk (``1/3``),
  exposed ``v (max(0, x - 2c/3v) + max(0, x - c/3v))`` in ``max t_i``; the warm-up and cool-down keep theirs
  exposed: the bubble term's ``(p-1)/v`` slots at full transfer cost, and the last stage's further ``(v-1) p``
  warm-up forward chunks and as many cool-down backward chunks, ``min(m, (v-1) p / v) phi (2 v x - t_slot)`` more
  (``m phi (2 v x - t_slot)`` with ``m = p``, all in the warm-up), where ``t_slot`` is the steady state's exposed
  transfer time per micro-batch [26].
  With Megatron-Core's ``defer_embedding_wgrad_compute``
  (``training.defer_output_wgrad``) the last stage skips the output layer's weight-gradient GEMM in the
  backward of the first ``k`` micro-batches and runs the k GEMMs after its last backward, in the flush,
  where only what outlasts its cool-down idle time is exposed (:func:`output_wgrad_deferral`) [27].
* Data parallel: gradient all-reduce or reduce-scatter + parameter all-gather (ZeRO-1/2,
  distributed optimizer) in the framework's reduction precision; with FP8 primary weights
  (``training.fp8_params``) the layers' GEMM weights are gathered in one byte [24]. With
  gradient-reduce overlap and one model chunk per stage the buckets are reduced during the
  backward of the last micro-batch and what does not fit behind it is exposed,
  ``max(t_rs - w_bwd, t_rs b / P)`` (the last bucket b of P parameters is never hidden; it holds at least
  the input embedding, whose gradient the backward computes last: :func:`last_bucket_params`; with FSDP's
  one-layer units the root unit, :func:`root_unit_params`); the
  parameter all-gather likewise behind the first forward [11]. With the interleaved schedule
  (v chunks) each chunk's reduction starts when its last backward is done, beside the
  cool-down's remaining backwards of the chunks after it, so ``max(t_rs / v, t_rs - (v-1) p
  w_bwd / v)`` is exposed, and each chunk's all-gather runs beside the p forwards of the chunk
  before it [19, 24] (:func:`dp_exposed`, with a worked case). Without overlap the whole
  reduction is exposed. ``parallelism.dp_overlap`` replaces this by a fixed hidden fraction.
  ZeRO-3 gathers the parameters twice and reduce-scatters the gradients every micro-batch, in
  the framework's gather and reduction precisions [4, 16] (FP8 weights in one byte [24], except where the
  framework's ZeRO-3 gathers 16 bits, ``zero3_fp8_param_gather``: NeMo's Megatron-FSDP); each of those
  per-layer collectives pays NCCL's ring latency, ``n - 1`` steps of which ``nodes - 1`` cross the network
  (:func:`~gpucluster_lib.training.comm.ring_steps_latency_s`).
  DeepSpeed fetches one module ahead: each pass over a layer
  takes ``sum_j max(c w_j, g w_(j+1))`` over its QKV, projection, FC1 and FC2 modules (parameter
  shares ``w_j``) [12]; in the backward each module's compute runs beside the next module's
  gather and the reduce-scatter of the module two back, ``sum_j max(c w_j, a w_(j-1) + r w_(j+2))``
  [15]. A prefetch is issued only while fewer than ``stage3_max_live_parameters`` elements are
  gathered (``training.zero3_max_live_parameters``, default the framework's 1e9), the rule the
  memory's gather buffers read [17]; a module not prefetched is gathered after the module before it
  (exposed: ``c w_j + g w_(j+1)``; backward ``max(c w_j, r w_(j+2)) + a w_(j-1)``) [18].
  PyTorch FSDP (``zero3_prefetch: unit``) gathers one unit (a transformer layer) ahead, all
  collectives on one NCCL stream: forward ``a + (n-1) max(f, a) + f``, backward with prefetch
  ``a + max(b, a) + (n-2) max(b, a + r) + max(b, r) + r`` (each unit computes beside the
  reduce-scatter of the unit above and the gather of the unit below), the root unit (embedding,
  final norm, output layer) exposed [13]. Frameworks with ``zero3_prefetch: fraction`` expose
  the fitted fraction ``zero3_overlap`` of compute.
* Optimizer: Adam state traffic at memory bandwidth. A fixed ``step_overhead`` fraction
  covers data loading, logging and stragglers; a framework may add a fixed time per step
  (``step_fixed_s``, data/training_frameworks.yaml).

Memory (every pipeline stage; the largest is reported with its stage)
--------------------------------------------------------------------
Mixed-precision Adam: 2 + 2 + 12 bytes per parameter for weights, gradients and optimizer
states, sharded over DP x CP by ZeRO stage 3 / 2 / 1 (or Megatron's distributed optimizer) [4];
Megatron-Core holds its gradients in the reduction precision (4 bytes with ``grad_reduce_in_fp32``),
and a run's optimizer may keep 16-bit moments or a partial master copy [21]; in FP8, Transformer
Engine's FP8 weight copies (2 bytes per GEMM weight element) unless the weights are FP8 [20].
Activations per layer, Korthikanti 2022 Table 2 generalised to GQA/SwiGLU/MoE [3]:
``s b (10h + (4q + 4kv + 4f)/t) + 5 a s^2 b / t`` (16-bit) where the ``10h`` part is split by
TP only with sequence parallelism, the score term vanishes with selective recomputation or a
fused attention kernel, and full recomputation keeps only ``2 s b h`` per layer; stage i holds
``min(p - i, m)`` micro-batches in flight with 1F1B [2], and with the interleaved schedule
``min(2 (p - i - 1) + (v - 1) p + 1, m v)`` model chunks of ``1/v`` of its layers, Megatron-Core's
warm-up forwards plus one [19] (Korthikanti's ``p (1 + (p-1)/(p v))`` on the first stage [3], about
``p`` on every stage); the last stage also holds one micro-batch of fp32 logits. ZeRO-3's gathered
parameters of the current and the prefetched unit (a layer; for DeepSpeed the weight module
computing and those prefetched behind it at the backward peak, [12, 17]) are their own line
(``gather_buffers``), so that weights + gradients + optimizer states read as ZeRO's
``16 P / N_d`` [4]; DeepSpeed's full 16-bit gradients awaiting their reduction at that peak are
``unreduced_gradients`` [17], and so are Megatron-FSDP's unsharded gradients in its reduce-scatter queue, two
layers in the reduction precision (:func:`reduce_queue_bytes`). Plus CUDA context, communication buffers and fragmentation.

References
----------
.. [1] Williams, Waterman, Patterson 2009, "Roofline", CACM 52(4).
.. [2] Narayanan et al. 2021 (arXiv:2104.04473) Sec. 2.2 (bubble), 3.2, Eq. 3.
.. [3] Korthikanti et al. 2022 (arXiv:2205.05198) Sec. 4, Table 2, Eq. 2-6.
.. [4] Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) Sec. 3.1, 5, 7 (16 bytes/parameter;
       ZeRO-3 communication 1.5x data parallel).
.. [5] Dao 2023, FlashAttention-2 (arXiv:2307.08691): Fig. 4 (A100) and Fig. 7 (H100) forward +
       backward speed, counted as flash-attention benchmarks/benchmark_flash_attention.py counts
       (4 b s^2 heads d_head forward, halved when causal; backward 2.5x).
.. [6] Thakur, Rabenseifner, Gropp 2005, "Optimization of collective communication operations
       in MPICH", IJHPCA 19(1): ring all-reduce 2 (n-1)/n S / B.
.. [7] Liu, Zaharia, Abbeel 2023, Ring Attention (arXiv:2310.01889).
.. [8] Megatron-LM ``LinearWithGradAccumulationAndAsyncCommunication``
       (megatron/core/tensor_parallel/layers.py, core_r0.8.0): backward all-gather and
       reduce-scatter overlapped with the data- and weight-gradient GEMMs.
.. [9] Wang et al. 2023, "Overlap communication with dependent computation via decomposition
       in large deep learning models" (ASPLOS '23), Sec. 4; Transformer Engine userbuffers
       (``initialize_ub``: ring-exchange all-gather, 4-way pipelined reduce-scatter, 16
       communication SMs). Values in data/training_frameworks.yaml.
.. [10] Makespan of m identical jobs through p stages in sequence (permutation flow shop,
        Johnson 1954, Naval Research Logistics Quarterly 1(1)): ``(m - 1) max t_i + sum t_i``
        with forward and backward of one micro-batch taken together as the job; for equal
        stages it is Narayanan 2021's ``t (m + p - 1)`` [2].
.. [12] DeepSpeed ZeRO-3 ``PartitionedParameterCoordinator.fetch_sub_module``
        (deepspeed/runtime/zero/partitioned_param_coordinator.py): after the current submodule's
        parameters, the ones of the next submodules in the recorded trace are prefetched while
        fewer than ``stage3_prefetch_bucket_size`` (default 5e7) elements are in flight; every
        weight of a GPT-3-size layer is larger than that, so one module is in flight ahead of
        the module computing (DeepSpeed configuration documentation, ZeRO
        ``stage3_prefetch_bucket_size``).
.. [13] PyTorch FSDP (FULL_SHARD): ``BackwardPrefetch`` (torch/distributed/fsdp/api.py: every
        collective of a process group runs on one NCCL stream, so issue order decides the
        overlap); the post-backward hook reshards, prefetches the next unit's all-gather and only
        then issues the reduce-scatter, which waits for the gradient computation
        (``_post_backward_hook``, torch/distributed/fsdp/_runtime_utils.py, PyTorch 2.0-2.1); with
        ``limit_all_gathers`` the CPU issues a gather after the free event of the unit two back
        (``_FreeEventQueue``, _limiter_utils.py, two gathers in flight); PyTorch "FSDP Notes:
        FSDP Prefetch Nuances" (docs/source/notes/fsdp.rst: implicit forward prefetch, no backward
        overlap without prefetch, no extra communication with activation checkpointing). Units:
        llm-foundry's ``MPTForCausalLM.fsdp_wrap_fn`` (each ``MPTBlock``); backward prefetch:
        Composer's default ``BACKWARD_POST`` (composer/trainer/dist_strategy.py v0.12.1-v0.16.4).
.. [16] ZeRO-3 / FSDP precisions (``zero3_gather_bytes``, ``zero3_reduce_bytes``): DeepSpeed
        reduce-scatters the 16-bit gradients (``allreduce_always_fp32`` false, stage3.py v0.3.13);
        Composer's FSDP mixed precision ``DEFAULT`` up to v0.13 keeps ``param_dtype`` None (fp32
        gathers) and reduces in the autocast dtype (composer/trainer/mosaic_fsdp.py v0.13.1,
        ``get_mixed_precision``); v0.14.0-v0.16.3 gather 16-bit parameters and leave
        ``reduce_dtype`` None, which PyTorch's ``MixedPrecision`` takes from ``param_dtype`` (16-bit
        reduction); from v0.16.4 it gathers 16-bit parameters and reduces in fp32
        (mosaic_fsdp_utils.py v0.16.4); ``PURE`` gathers and reduces in 16 bits. ``training.param_gather_precision`` / ``grad_reduce_precision`` set them per run.
.. [14] PyTorch non-reentrant activation checkpoint (torch/utils/checkpoint.py, v2.1.0):
        during the recomputation ``_recomputation_hook``'s pack hook counts the tensors saved
        again and raises ``_StopRecomputationError`` once the count reaches the number the
        original forward saved (``set_checkpoint_early_stop``, default on; added by
        github.com/pytorch/pytorch/pull/96866, merged 2023-03 after the v2.0.0 branch, so v2.0.0 and
        v1.13.1 rerun the whole function); autograd saves an op's inputs before running it, so
        the op whose input is the last saved tensor does not run. Megatron-LM's and DeepSpeed's
        ``CheckpointFunction`` (a reentrant ``torch.autograd.Function``) rerun the whole layer.
        MPT block order (llm-foundry b2a43a1, llmfoundry/models/layers/blocks.py, ffn.py): norm_1,
        attention, out_proj, residual, norm_2, up_proj, GELU, down_proj, residual (resid_pdrop 0).
.. [15] DeepSpeed ZeRO-3 gradient reduction with ``overlap_comm`` (the stage-3 default):
        ``FP16_DeepSpeedZeroOptimizer_Stage3.reduce_independent_p_g_buckets_and_remove_grads``
        reduces the bucket (``reduce_ipg_grads``, which starts with
        ``reduction_stream.synchronize()``) when the next gradient would overflow
        ``reduce_bucket_size`` (5e8 elements); a larger gradient is reduced at the next call
        (``extra_large_param_to_reduce``), deepspeed/runtime/zero/stage3.py, v0.3.13.
.. [17] DeepSpeed ZeRO-3 memory in the backward, v0.3.13-v0.4.0 (2021-03 to 2021-06; defaults in
        deepspeed/runtime/zero/constants.py: ``reduce_bucket_size`` 5e8, ``stage3_max_live_parameters``
        1e9, ``stage3_prefetch_bucket_size`` 5e7, stage-3 ``contiguous_gradients`` false and
        ``overlap_comm`` true). deepspeed/runtime/zero/stage3.py: each weight's full gradient waits
        in the bucket (``reduce_independent_p_g_buckets_and_remove_grads``) until the next one would
        overflow it; ``reduce_ipg_grads`` first partitions the bucket reduced before
        (``partition_previous_reduced_grads``), then all-reduces this one (``buffered_reduce_fallback``),
        whose full gradients stay until the next call. ``PartitionedParameterCoordinator``
        ``prefetch_next_sub_modules`` prefetches only while ``total_available_parameter_numel`` is below
        ``max_available_parameters_in_numel``; ``release_sub_module`` frees a module's gathered weight
        after its use (its reuse distance exceeds ``stage3_max_reuse_distance``, 1e9).
.. [18] DeepSpeed ZeRO-3 gathers of modules that were not prefetched, v0.3.13:
        ``fetch_sub_module`` (the module's pre-forward / pre-backward hook) gathers what is not
        available and waits for it; ``_allgather_param`` (deepspeed/runtime/zero/partition_parameters.py)
        calls ``torch.cuda.synchronize()`` before it issues the all-gather, so the CPU first waits for
        the previous module's compute and every stream's work (the reduce-scatter in flight): the
        gather runs after them, not beside them.
.. [11] Megatron-Core ``DistributedDataParallel`` (overlap_grad_reduce, overlap_param_gather,
        bucket size max(40M, 1M x DP) parameters), core_r0.8.0.
.. [19] Megatron-Core ``forward_backward_pipelining_with_interleaving``
        (megatron/core/pipeline_parallel/schedules.py, core_v0.8.0): pipeline rank i runs
        ``(p - i - 1) * 2 + (v - 1) * p`` warm-up forwards of model chunks (at most all ``m v``) before
        its first backward, then one forward before each backward; ``forward_backward_pipelining_without_interleaving``
        runs ``min(p - i - 1, m)`` (:func:`gpucluster_lib.training.memory.in_flight_factor`).
.. [21] Model-state bytes: Megatron-Core's gradient buffer is allocated in the reduction precision
        (``grad_dtype = torch.float if ddp_config.grad_reduce_in_fp32 else param.dtype``,
        megatron/core/distributed/distributed_data_parallel.py, core_v0.8.0), and it and the distributed
        optimizer's shards span the data-parallel group with context parallelism
        (``get_data_parallel_group(with_context_parallel=True)``); Megatron-LM's theoretical memory counts
        "bf16 model params, fp32 main gradients, fp32 main params, and fp32 Adam states": 18 bytes per
        parameter, 6 + 12/d with the distributed optimizer (megatron/training/theoretical_memory_usage.py).
        NeMo 1.x's Apex DistributedFusedAdam keeps the moments in ``optim.dtype`` and, for a bf16 model with
        an fp32 optimizer, only the 16 low bits of the fp32 master (``store_param_remainders``); a bf16
        optimizer on a bf16 model keeps no master copy (megatron_base_model.py setup_optimization, NeMo
        v2.0.0; apex/contrib/optimizers/distributed_fused_adam.py StateBucket).
.. [20] Transformer Engine v1.10 (transformer_engine/pytorch/module/linear.py, layernorm_linear.py): in FP8
        a linear layer saves the FP8 cast of its input for the weight gradient (one byte per element), and
        with ``is_first_microbatch`` given (Megatron-Core's TELinear) keeps its FP8 weight and transpose in
        a persistent workspace, two bytes per weight element beside the 16-bit weight, unless the weight is
        itself FP8 (``fp8_params``); the framework's ``fp8_saved_inputs`` / ``fp8_weight_copies``.
.. [22] Transformer Engine attention backend selection: FusedAttention (cuDNN) preferred over flash-attn
        on compute capability 9.0 from v1.2 and on 9.0 and above from v1.14 (release_v1.14, 3b2a7b00; v1.13 on 9.0 only)
        (transformer_engine/pytorch/attention.py, "Disabling FlashAttention to give FusedAttention
        preference on Hopper+ for performance reasons"); Megatron-Core's TE layer spec
        (TEDotProductAttention, megatron/core/models/gpt/gpt_layer_specs.py, core_r0.8.0).
.. [23] NVIDIA cudnn-frontend benchmark files: benchmark/benchmark_results.csv at de355c7 (cuDNN 9.4,
        Hopper, causal forward + backward, head dimension 128) and
        benchmark/sdpa_benchmark_training/results/llama3.1/gb200/llama3.1_20260424_100750.csv at
        fb682ce (cuDNN 9.22, GB200).
.. [24] Data-parallel overlap with the interleaved schedule and FP8 parameter gathers, Megatron-LM:
        ``forward_backward_pipelining_with_interleaving`` (megatron/core/pipeline_parallel/schedules.py,
        core_r0.8.0 and core_r0.10.0): gradients are synchronised only after the last micro-batch of each
        model chunk (``is_last_microbatch_for_model_chunk``); with ``config.grad_sync_func`` (set by
        megatron/training/training.py whenever ``--overlap-grad-reduce`` is on and ``--delay-grad-reduce`` / ``--align-grad-reduce``, both default
        true) rank r calls ``grad_sync_func[chunk]`` after its backward ``grad_sync_microbatch_id =
        microbatch_id - pipeline_parallel_rank``, so every rank launches a chunk's reduction at the first
        stage's time, after that chunk's last backward; chunks not yet synchronised (chunk 0) are launched
        after the cool-down. The DDP ``no_sync`` context keeps ``is_last_microbatch`` false during each
        backward (megatron/core/distributed/distributed_data_parallel.py), so a chunk's buckets are not
        launched during its own last backward; model chunks after the first are one bucket
        (``disable_bucketing=(model_chunk_idx > 0)``, training.py). NeMo 1.x passes the same schedule
        ``grad_sync_func = self.reduce_overlap_gradients`` (Apex distributed Adam) or, with Megatron-Core's
        optimizer, ``model_chunk.start_grad_sync`` unless ``optim.align_grad_reduce`` is false
        (nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py ``fwd_bwd_step``, v2.0.0).
        NeMo 2.x sets ``grad_sync_func`` only if ``getattr(ddp_config, "align_grad_reduce", False)``
        (``extract_ddp_funcs``, nemo/lightning/megatron_parallel.py, v2.0.0-v2.4.0), a field Megatron-Core's
        DistributedDataParallelConfig does not have, so there each chunk's sync is enabled before its last
        backward and the first stage's chunk 0 (the one chunk with several buckets) is reduced bucket by
        bucket during it: at most one chunk-backward (w / v) more hidden than modelled here.
        Parameters: chunks 0 and 1 are gathered at the start, chunk c >= 2 when chunk c-1's first forward
        starts (``param_sync_func[param_sync_chunk_id]`` with ``param_sync_chunk_id =
        get_model_chunk_id(...) + 1``, aligned the same way); in core_r0.8.0 the distributed optimizer's
        forward pre-hook waits on gather i and dispatches gather i+1 (``_finish_param_sync_helper``,
        megatron/core/optimizer/distrib_optimizer.py), chunk by chunk. FP8 weights: "fp8_param_gather: If
        true, keep the compute param in fp8 (do not use any other intermediate dtype) and perform the param
        all-gather in fp8" (megatron/core/distributed/distributed_data_parallel_config.py, core_r0.10.0);
        a Float8Tensor parameter's buffer is ``param_dtype = torch.uint8`` (distributed_data_parallel.py,
        core_r0.9.0 on); Megatron-FSDP takes the same flag (megatron/core/distributed/fsdp/
        mcore_fsdp_adapter.py, Megatron-LM d98e8a64dd, 2026-08-22); NeMo
        1.x's MegatronDistributedFusedAdam initialises FP8 parameters with ``param_sync_dtype=torch.uint8``
        (nemo/core/optim/distributed_adam.py ``init_params``). Transformer Engine's modules hold the FP8
        weights (the layers' GEMM weights); embedding, output layer, norms and router stay 16-bit.
.. [21] Transformer Engine FP8 casts, v1.9 transformer_engine/pytorch/module/linear.py (the input's
        fp8_cast_transpose_fused; with sequence parallelism cast_to_fp8 and an FP8 gather), layernorm_linear.py
        (the norm writes FP8, tex.fp8_transpose in the backward), base.py grad_output_preprocess (the output
        gradient), ``is_first_microbatch`` weight caching; csrc/quantizer.cpp (current scaling's amax pass,
        MXFP8's row- and column-wise copies); docs performance_considerations.rst (Hopper transposes, Blackwell
        does not); docs/examples/gemm_profiling/gemm_profiling.rst (FP8 / BF16 kernel ratio, H200 NVL, B300).
.. [25] TorchTitan op-level selective activation checkpointing (``activation_checkpoint.mode = "selective"``,
        ``selective_ac_option = "op"``, torchtitan/models/llama3/train_configs/llama3_8b.toml at e7c0cae):
        ``_custom_policy`` (torchtitan/models/llama3/parallelize_llama.py, e7c0cae) counts ``aten.mm`` per block
        ("Saves output of all compute ops, except every second mm"), returning ``PREFER_RECOMPUTE`` for the
        even-numbered ones and for every op outside ``_save_list`` (mm, SDPA, reduce-scatter, max); a block calls
        wq, wk, wv, wo, w1, w3, w2 in that order (torchtitan/models/llama3/model.py, e7c0cae). torchao's
        Float8Linear issues its forward GEMM as ``torch.mm`` on float8 tensors (torchao/float8/float8_linear.py,
        0afa4c1, line 120). Under torch.compile the partitioner treats ``PREFER_RECOMPUTE`` as must-recompute
        (``must_recompute``, torch/_functorch/partitioners.py, pytorch c28ba8e58, one stored version).
.. [26] Pipeline point-to-point overlap in the interleaved schedule (Megatron-Core ``overlap_p2p_comm``;
        ``forward_backward_pipelining_with_interleaving``, megatron/core/pipeline_parallel/schedules.py,
        core_r0.8.0 = baf94af3c6): in the steady state each forward chunk's send and receive are issued
        asynchronously (``send_forward_recv_forward(..., overlap_p2p_comm=True)`` returns wait handles) and waited
        only before the next forward, after a backward chunk has run; each backward chunk's before the next
        backward, after a forward chunk. In the warm-up the handles are waited at the top of the next iteration
        with no compute between, and the cool-down's ``send_backward_recv_backward`` blocks (l.1095-1120): there the
        transfers stay exposed. The last rank runs ``num_warmup_microbatches = 2 (p - r - 1) + (v - 1) p = (v - 1) p``
        warm-up forward chunks (l.650-652; all ``m v`` when ``m = p``, l.646-648) and as many cool-down backwards,
        ``(v - 1) p / v`` micro-batches' worth beyond the bubble's ``(p - 1)/v``: a discrete-event replay of the
        schedule's waits (session-25 review, p 8, v 4, m 32, f 1, b 2, x 0.3) gives 423.6 against this model's
        423.6 (409.2 without the warm-up and cool-down term); at x 1.5 (partial hiding) 549.5 against 550.0. The
        non-interleaved schedule refuses the option ("Non-interleaved pipeline parallelism does not support
        overlapping p2p communication", l.1286-1289). Megatron-LM added
        the option on 2023-05-31 (commit f9283c5a8a, "Add option to overlap p2p communication"), on by default for
        interleaving since (``--no-overlap-p2p-communication``, store_false, megatron/training/arguments.py,
        core_r0.8.0); NeMo 1.x configs set it (NeMo-Framework-Launcher 24.07 gpt3/175b.yaml, llama2_13b, llama2_70b,
        llama3_70b, nemotron_22b: true; nemotron_340b: false, batch_p2p_comm true); NeMo 2.x's
        MegatronCommOverlapCallback and Megatron-Bridge's CommOverlapConfig turn it on whenever the pipeline is
        interleaved (src/megatron/bridge/training/comm_overlap.py v0.2.0 line 453: "if vp_size > 1:
        comm_overlap_cfg.overlap_p2p_comm = True").
.. [27] Megatron-Core output-layer weight-gradient deferral, NVIDIA/Megatron-LM core_v0.8.0 (same code paths to
        core_v0.18.0): megatron/core/model_parallel_config.py ``defer_embedding_wgrad_compute`` ("defers the
        embedding WGRAD GEMMs while pipeline flush is taking place enabling us to hide pipeline flush latency")
        and ``wgrad_deferral_limit`` ("the number of micro-batches for which the embedding weight gradient compute
        needs to be deferred to pipeline flush ... 0, which means all micro-batches are deferred");
        megatron/core/tensor_parallel/layers.py: the output ``ColumnParallelLinear`` appends its input to
        ``embedding_activation_buffer`` in the forward and ``LinearWithGradAccumulationAndAsyncCommunication.backward``
        its output gradient to ``grad_output_buffer`` "if wgrad_deferral_limit == 0 or len(grad_output_buffer) <
        wgrad_deferral_limit", skipping the weight-gradient GEMM (the data-gradient GEMM still runs), i.e. the first
        ``limit`` micro-batches of a step; megatron/core/pipeline_parallel/schedules.py: both pipelined schedules
        call ``finish_embedding_wgrad_compute`` on the last pipeline rank after their cool-down loop (after that
        rank's last backward) and before ``finalize_model_grads_func``, which runs ``drain_embedding_wgrad_compute``
        (megatron/core/utils.py): one weight-gradient GEMM per buffered micro-batch, accumulated into main_grad;
        ``forward_backward_no_pipelining`` does not drain (no deferral without pipeline parallelism).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from gpucluster_lib.calibration.gemm import GemmCurve, gemm_curve
from gpucluster_lib.training.comm import ring_allgather_s, ring_allreduce_s, ring_steps_latency_s
from gpucluster_lib.training.efficiency import Efficiency
from gpucluster_lib.training.framework import (
    Fp8Casts,
    Framework,
    TpOverlap,
    fp8_casts,
    framework,
    tp_overlap_terms,
)
from gpucluster_lib.training.memory import (
    StateBytes,
    activation_bytes_per_layer,
    in_flight_factor,
    model_state_bytes,
)
from gpucluster_lib.units import GIB, TERA
from gpucluster_lib.workloads.transformer import TransformerArch

#: Bytes per element of 16-bit activations, weights and gradients.
BYTES_16 = 2
#: Mixed-precision Adam: fp32 master weights, momentum and variance [4].
OPTIMIZER_BYTES_PER_PARAM = 12
#: fp32 gradient reduction (Megatron-LM accumulates and all-reduces main grads in fp32).
GRAD_REDUCE_BYTES_FP32 = 4

#: Share of the per-hidden element-wise traffic (``elementwise_bytes_per_hidden``: two LayerNorms of
#: 4h bytes and two dropout-residual-adds of 7h, data/efficiency.yaml) in the block's last op, the
#: second dropout-residual-add: 7 of 22.
RESIDUAL_ADD_SHARE = 7.0 / 22.0
#: The bytes per hidden element that data/efficiency.yaml counts in ``elementwise_bytes_per_hidden`` (22), and
#: of them the one-byte dropout mask each dropout-residual-add writes (read 2 + residual 2, write 2, mask 1):
#: a hidden dropout of 0 writes no mask (PyTorch's dropout returns its input at p = 0, memory.py [4]), so
#: the two adds move 6h each, 20 of the 22, the second one 6 of those 20.
ELEMENTWISE_COUNTED = 22.0
DROPOUT_MASK_BYTES = 1.0


def elementwise_terms(ctx: Context) -> tuple[float, float]:
    """Element-wise forward traffic per hidden element of a layer [bytes] and the share of it in the
    block's last op, the second (dropout-)residual-add: ``elementwise_bytes_per_hidden`` and 7/22 with a
    hidden dropout above 0, else without the two one-byte masks, the value scaled by 20/22 (22 -> 20)
    and 6/20."""
    ew = ctx.eff.elementwise_bytes_per_hidden
    if ctx.arch.hidden_dropout > 0:
        return ew, RESIDUAL_ADD_SHARE
    kept = ELEMENTWISE_COUNTED - 2.0 * DROPOUT_MASK_BYTES
    return ew * kept / ELEMENTWISE_COUNTED, (RESIDUAL_ADD_SHARE * ELEMENTWISE_COUNTED - DROPOUT_MASK_BYTES) / kept

#: Plan arrays. ``tpo``: TP communication overlap (0/1); ``lf``/``ll``: layers on the first and
#: the last pipeline stage; ``lm``: the most layers on a middle stage; ``l1``: layers on stage 1
#: (the middle stage with the most micro-batches in flight). Equal stages: all ``layers / pp``.
PLAN_KEYS = ("tp", "pp", "dp", "cp", "ep", "mb", "gbs", "vp", "rc", "sp", "zero", "dopt", "tpo", "lf", "ll", "lm", "l1")
RC_CODES = {"none": 0, "selective": 1, "full": 2}
RC_NAMES = {v: k for k, v in RC_CODES.items()}

BREAKDOWN_KEYS = ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "bubble",
                  "dp_comm", "optimizer", "framework", "overhead")
MEMORY_KEYS = ("weights", "gradients", "optimizer_states", "gather_buffers", "unreduced_gradients", "activations",
               "other")

#: Smallest GEMM dimension of the measurements behind the shipped GEMM curve (OpenXLA's H100
#: table, 256-4096; see gpucluster_lib.calibration.gemm) [elements].
CURVE_MIN_DIM = 256.0

#: Plans evaluated per numpy call: bounds the temporaries (~1 kB per plan) of a large search.
CHUNK = 65536


@dataclass(frozen=True)
class Context:
    """Everything but the plan: model, hardware, efficiency and framework (scalars, SI units)."""

    arch: TransformerArch
    gpus: int
    gpus_per_node: int
    nvlink_domain: int
    peak_flops: float  # dense peak of the training precision [FLOP/s]
    peak16_flops: float  # dense 16-bit peak (attention, element-wise math) [FLOP/s]
    memory_bw: float  # HBM bandwidth [B/s]
    memory_capacity: float  # device memory [B]
    nvlink_bw: float  # scale-up bandwidth per GPU per direction [B/s]
    nic_bw: float  # scale-out bandwidth per GPU per direction [B/s]
    eff: Efficiency
    flash_attention: bool = True
    flat_collectives: bool = False
    fp8: bool = False
    #: FP8 training's cast traffic (the recipe resolved for the framework and GPU generation); None with
    #: ``fp8``: the framework's recipe on ``eff.generation``
    fp8_casts: Fp8Casts | None = None
    framework: Framework = field(default_factory=lambda: framework("megatron"))
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    tp_terms: TpOverlap = field(default_factory=tp_overlap_terms)
    #: GEMM efficiency curve of the training precision (its shape factor scales ``gemm_efficiency``).
    gemm: GemmCurve = field(default_factory=lambda: gemm_curve("bf16"))
    #: bytes per parameter of the model states (:class:`~.memory.StateBytes`)
    states: StateBytes = field(default_factory=StateBytes)
    #: the linear layers save the FP8 cast of their inputs (FP8 through Transformer Engine) [20]
    fp8_saved_inputs: bool = False
    #: full recomputation's saved layer inputs are split over the tensor-parallel ranks
    #: (``training.distribute_saved_activations``)
    distribute_saved_activations: bool = False
    #: FP8 primary weights (``training.fp8_params``, with FP8 training): the parameter all-gathers move the
    #: layers' GEMM weights in one byte [24]
    fp8_params: bool = False
    #: ZeRO-3's parameter all-gathers move those FP8 weights in one byte (None: as ``fp8_params``); false for a
    #: framework whose ZeRO-3 gathers stay 16-bit (``zero3_fp8_param_gather``: NeMo's Megatron-FSDP) [24]
    zero3_fp8_params: bool | None = None
    #: the last pipeline stage defers the output layer's weight-gradient GEMMs to the flush
    #: (``training.defer_output_wgrad``, Megatron-Core ``defer_embedding_wgrad_compute``) [27]
    defer_output_wgrad: bool = False
    #: micro-batches deferred, 0 = all (``training.wgrad_deferral_limit``, Megatron-Core ``wgrad_deferral_limit``)
    wgrad_deferral_limit: int = 0
    #: the scenario's own layers per pipeline stage (``parallelism.pipeline_layers``), first to last; None: the
    #: layouts made here. A plan with as many stages has this layout (:func:`memory_stages` reads each middle stage)
    pipeline_layers: tuple[int, ...] | None = None


def pipeline_zero(ctx: Context, zero, pp):
    """The ZeRO stage whose memory and traffic a plan has (elementwise): ZeRO-3 beside pipeline stages under a
    framework that gathers once a step (``pipeline_zero3: step``, TorchTitan's FSDP2 under
    torch.distributed.pipelining) holds each stage's 16-bit parameters and its gradients whole for the step, with
    the fp32 parameters and optimizer states sharded, and gathers and reduce-scatters once a step: ZeRO-1 (its
    reduce-scatter runs after the last backward, its gradients accumulate in the reduction precision:
    :class:`MemoryCommon`; data/training_frameworks.yaml gives the sources). Otherwise ``zero``."""
    if ctx.framework.pipeline_zero3 != "step":
        return zero
    return np.where((np.asarray(zero) == 3) & (np.asarray(pp) > 1), 1, zero)


def pipelined_fsdp2(ctx: Context, zero, pp):
    """Whether each plan runs FSDP2 under torch.distributed.pipelining (elementwise): a framework whose ZeRO-3
    gathers once a step beside pipeline stages (``pipeline_zero3: step``, TorchTitan), pipeline stages, and ZeRO-3
    or ZeRO-0. TorchTitan applies FSDP2 to every plan, ZeRO-0 as a data-parallel mesh with a shard degree of 1
    ("with shard_degree=1 it is a no-op for the all-gather but still installs the MixedPrecisionPolicy",
    torchtitan/models/llama3/parallelize.py at b5bcd76c6), and the pipeline stage reduces the gradients once, after
    the last backward (``perform_reduce_grad``, torch/distributed/pipelining/stage.py): the reduction is exposed and
    the whole gradients wait in the reduction precision (:class:`MemoryCommon`)."""
    if ctx.framework.pipeline_zero3 != "step":
        return np.zeros(np.broadcast(np.asarray(zero), np.asarray(pp)).shape, dtype=bool)
    z = np.asarray(zero)
    return ((z == 3) | (z == 0)) & (np.asarray(pp) > 1)


def zero3_fp8(ctx: Context) -> bool:
    """Whether ZeRO-3's parameter all-gathers move the layers' GEMM weights in one byte [24]: FP8 training with
    FP8 primary weights, unless the context says otherwise for ZeRO-3 (``Context.zero3_fp8_params``, from the
    framework's ``zero3_fp8_param_gather``: NeMo's Megatron-FSDP gathers 16 bits, NeMo v2.3.0
    scripts/performance/utils.py lines 352-354)."""
    on = ctx.fp8 and ctx.fp8_params
    return on if ctx.zero3_fp8_params is None else on and bool(ctx.zero3_fp8_params)


def _gemm_time(M, K, N, P, e, curve, B, em):
    """Roofline time of one (M x K) @ (K x N) GEMM [s]: compute at ``P e`` times the curve's
    shape factor for (M, N, K) (fixed time per GEMM included), or bytes at memory bandwidth."""
    flops = 2.0 * M * K * N
    byts = BYTES_16 * (M * K + K * N + M * N)
    shape = curve.shape_factor(M, N, K, P / TERA)
    return np.maximum(flops / (P * e * shape), byts / (B * em))


_ring_allreduce = ring_allreduce_s
_ring_gather = ring_allgather_s


def layer_params(ctx: Context, tp, ep):
    """Parameters of one transformer layer on one GPU (MoE layers averaged in) [parameters]."""
    a = ctx.arch
    attn = a.attention_params_per_layer() + a.norm_params_per_layer()
    dense_ffn = a.ffn_params(a.ffn_hidden_size)
    e_ffn = a.ffn_params(a.expert_ffn_hidden_size or a.ffn_hidden_size) if a.is_moe else 0
    moe = (a.num_experts / ep + a.shared_experts) * e_ffn + a.hidden_size * a.num_experts
    return (attn + (a.dense_ffn_layers * dense_ffn + a.moe_layers * moe) / a.layers) / tp


def layer_gemm_params(ctx: Context, tp, ep):
    """Weights of one transformer layer's matrix multiplications on one GPU (attention projections,
    dense FFN, routed and shared experts; MoE layers averaged in; no norms, biases or router)
    [parameters]: those Transformer Engine keeps an FP8 copy of [20]."""
    a = ctx.arch
    dense = a.ffn_matmul_params(a.ffn_hidden_size)
    experts = (a.num_experts / ep + a.shared_experts) * a.ffn_matmul_params(a.expert_ffn_hidden_size or a.ffn_hidden_size)
    ffn = (a.dense_ffn_layers * dense + (a.moe_layers * experts if a.is_moe else 0.0)) / a.layers
    return (a.attention_matmul_params_per_layer() + ffn) / tp


def embedding_params(ctx: Context, tp):
    """Input embedding (and learned positions) on the first stage; output layer on the last, with
    the final norm (replicated over TP, split by nothing) counted there too [parameters]."""
    a = ctx.arch
    emb = a.vocab_size * a.hidden_size / tp + (a.seq_length * a.hidden_size if a.position_embedding == "learned" else 0)
    return emb, a.vocab_size * a.hidden_size / tp + final_norm_params(ctx, tp)


def final_norm_params(ctx: Context, tp):
    """The final norm before the output layer (weight, and bias for LayerNorm) [parameters]."""
    a = ctx.arch
    return a.hidden_size * (2 if a.norm == "layernorm" else 1) / tp


def stage_params(ctx: Context, tp, pp, ep, lf=None, ll=None):
    """Parameters held by one GPU of the first and of the last pipeline stage [parameters].

    ``lf`` / ``ll``: layers on those stages (default ``layers / pp``).
    """
    L = ctx.arch.layers
    lf = L / np.asarray(pp, dtype=float) if lf is None else lf
    ll = L / np.asarray(pp, dtype=float) if ll is None else ll
    lp = layer_params(ctx, tp, ep)
    emb, out = embedding_params(ctx, tp)
    first = lf * lp + emb
    last = ll * lp + np.where(pp > 1, out, final_norm_params(ctx, tp) if ctx.arch.tied_embeddings else out)
    return first, last


#: numpy dtype of each plan array (the rest are float).
PLAN_DTYPES = {"rc": int, "sp": bool, "zero": int, "dopt": bool}


def plan_arrays(plans: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every plan key of ``plans`` as a numpy array of its dtype (:data:`PLAN_DTYPES`, else float)."""
    return {k: np.asarray(plans[k], dtype=PLAN_DTYPES.get(k, float)) for k in PLAN_KEYS if k in plans}


def complete_plans(ctx: Context, plans: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Fill the plan keys a caller may omit: no TP overlap, equal pipeline stages."""
    out = dict(plans)
    pp = np.asarray(out["pp"], dtype=float)
    even = ctx.arch.layers / pp
    out.setdefault("tpo", np.zeros_like(pp))
    for k in ("lf", "ll", "lm", "l1"):
        out.setdefault(k, even)
    return out


def evaluate(ctx: Context, plans: dict[str, np.ndarray], chunk: int = CHUNK) -> dict[str, np.ndarray]:
    """Step time [s], its breakdown [s] and memory per GPU [B] for every plan (arrays).

    Large plan sets are evaluated ``chunk`` plans at a time (same results, bounded memory).
    """
    plans = complete_plans(ctx, plans)
    n = len(np.atleast_1d(plans["tp"]))
    if n <= chunk:
        return _evaluate(ctx, plans)
    parts = [_evaluate(ctx, {k: np.asarray(v)[i:i + chunk] for k, v in plans.items()}) for i in range(0, n, chunk)]
    return concat_results(parts)


def concat_results(parts):
    """One result from the results of consecutive plan chunks (:func:`evaluate`'s dicts, nested
    or not, or plain arrays): each array joined along the plan axis, in chunk order; units are
    those of the parts."""
    first = parts[0]
    if isinstance(first, dict):
        return {k: concat_results([p[k] for p in parts]) for k in first}
    return np.concatenate(parts)


def fp8_terms(ctx: Context) -> Fp8Casts | None:
    """The FP8 cast traffic of the context (None without FP8 training)."""
    if not ctx.fp8:
        return None
    return ctx.fp8_casts if ctx.fp8_casts is not None else fp8_casts(ctx.framework, ctx.eff.generation)


def fp8_cast_bytes(ctx: Context, M, tp, sp):
    """Memory traffic of FP8 training's activation casts, per transformer layer and micro-batch on one GPU
    [bytes]: ``(forward, backward, ffn_output_input)``, the last the forward cast of the dense FFN output
    projection's input (left out of a recomputation that stops early [14]). Zeros without FP8 [21].

    Per FP8 GEMM (QKV, projection, FC1, FC2 of :func:`layer_terms`) the input X is cast in the forward and
    the output gradient dY in the backward, each ``quantize`` = 2 + 1 + c + amax + scales bytes per element
    of the 16-bit tensor (:class:`~gpucluster_lib.training.framework.Fp8Casts`), with these exceptions:

    * an input the norm writes (the framework's ``fp8_norm_fused``, QKV and FC1 for Megatron-Core, with a
      recipe that fuses it, delayed scaling): -1 forward (1 byte written, not 2) and a transpose 2 c in
      the backward; with a recipe that does not fuse it the norm's 16-bit output is cast (``cast`` less the
      amax when the norm takes it, + c);
    * with sequence parallelism (and a recipe that gathers FP8), the tensors gathered over the t
      tensor-parallel ranks, the column-parallel inputs (QKV, FC1) and the row-parallel output gradients
      (projection, FC2), are cast on the local 1/t shard and their column-wise copy is a transpose of the
      gathered tensor: ``cast / t + 2 c`` (the norm-written input: -1 / t forward, 2 c backward).

    Elements per GEMM (M tokens per micro-batch, hidden h, attention output q, QKV width n_qkv, FFN width
    f, t = TP): X = M h, M q / t, M h, M f / t and dY = M n_qkv / t, M h, M (mats - 1) f / t, M h; MoE FFN
    layers route each token to k experts (+ shared): their FC1 input and FC2 output gradient count k + s
    copies of M h and their FFN widths (k + s) f_e, cast on their own.

    Worked case (Hopper, delayed scaling, Megatron-Core, no TP): c = 1, quantize = 4. GPT-3 5B layer
    (h 4096, f 16384, M = 4 x 2048 = 8192): X bytes -1 x 8192 x 4096 (QKV, norm-written) + 4 x 8192 x 4096
    (projection) - 1 x 8192 x 4096 (FC1) + 4 x 8192 x 16384 (FC2) = 603.98e6 forward; backward the two
    transposes 2 x 2 x 8192 x 4096 = 134.22e6 and dY 4 x 8192 x (12288 + 4096 + 16384 + 4096) = 1,207.96e6:
    1,946.16e6 bytes, 0.683 ms at 0.85 x 3.35 TB/s.
    """
    casts = fp8_terms(ctx)
    if casts is None:
        zero = 0.0 * M
        return zero, zero, zero
    a = ctx.arch
    h = float(a.hidden_size)
    q_out = float(a.attention_output_dim())
    n_qkv = (a.attention_matmul_params_per_layer() - q_out * h) / h
    mats = 3 if a.ffn_type == "swiglu" else 2
    f = float(a.ffn_hidden_size)
    moe_frac = a.moe_layers / a.layers
    dense_frac = 1.0 - moe_frac
    copies = float(a.experts_per_token + a.shared_experts) if a.is_moe else 0.0  # token copies through an MoE FFN
    fe = float(a.expert_ffn_hidden_size or a.ffn_hidden_size) if a.is_moe else 0.0
    q, c, col = casts.quantize, casts.cast, casts.columnwise
    gathered = (np.asarray(sp, dtype=bool) & (tp > 1)) if casts.gather_quantized else np.zeros_like(tp, dtype=bool)
    # a tensor gathered in FP8 over the tensor-parallel ranks: cast on the shard, transposed whole
    g_fwd, g_bwd = np.where(gathered, c / tp, q), np.where(gathered, 2.0 * col, 0.0)
    if casts.norm_fusion:  # the norm writes the FP8 input: 1 byte instead of 2, transposed in the backward
        n_fwd, n_bwd = np.where(gathered, -1.0 / tp, -1.0), 2.0 * col
    else:  # the norm writes 16 bits (and the amax, when it takes it), then the cast
        cn = c - (casts.amax if casts.amax_in_norm else 0.0)
        n_fwd, n_bwd = np.where(gathered, cn / tp, cn + col), np.where(gathered, 2.0 * col, 0.0)
    qkv_fwd, qkv_bwd = (n_fwd, n_bwd) if casts.norm_qkv else (g_fwd, g_bwd)
    fc1_fwd, fc1_bwd = (n_fwd, n_bwd) if casts.norm_fc1 else (g_fwd, g_bwd)
    x_fc2_dense = q * M * f / tp
    fwd = (qkv_fwd * M * h + q * M * q_out / tp
           + dense_frac * (fc1_fwd * M * h + x_fc2_dense)
           + moe_frac * q * M * (copies * h + copies * fe / tp))
    bwd = (qkv_bwd * M * h + dense_frac * fc1_bwd * M * h
           + q * M * n_qkv / tp + (g_fwd + g_bwd) * M * h  # dY: QKV (local), projection (gathered with SP)
           + dense_frac * (q * M * (mats - 1) * f / tp + (g_fwd + g_bwd) * M * h)
           + moe_frac * q * M * copies * ((mats - 1) * fe / tp + h))
    return fwd, bwd, dense_frac * x_fc2_dense


def fp8_weight_cast_s(ctx: Context, tp, ep, m):
    """Time of FP8 training's weight casts per transformer layer and micro-batch on one GPU [s]: the layer's
    weights (:func:`layer_params`) at ``quantize`` bytes per element, once per global batch of ``m``
    micro-batches when the framework caches the FP8 weights (Transformer Engine's ``is_first_microbatch``,
    Megatron-Core), else on every micro-batch. Zero without FP8 [21]."""
    casts = fp8_terms(ctx)
    if casts is None:
        return 0.0 * m
    t_w = casts.quantize * layer_params(ctx, tp, ep) / (ctx.memory_bw * ctx.eff.memory_efficiency)
    return t_w / m if casts.weight_cast_per_step else t_w + 0.0 * m


def every_second_mm_s(ctx: Context, gemm, M, tp, t_experts=0.0):
    """Forward time of the matmuls that TorchTitan's op-level selective activation checkpointing reruns in the
    backward, per dense layer and micro-batch [s] [25]. The policy counts the ``aten.mm`` calls of a block's
    forward (the count restarts in each block) and saves the odd-numbered ones; a Llama block calls them in the
    order Q, K, V, output projection, w1, w3, w2, so K, the output projection and w3 are rerun (a GELU FFN: K,
    the output projection and FC2). ``gemm(M, K, N)``: one GEMM's time [s]; ``M``: tokens per micro-batch per
    GPU; ``tp``: tensor-parallel ranks. The element-wise ops and FP8 casts the policy also leaves to the
    recomputation are not counted (a lower bound). Elementwise over arrays that broadcast.

    MoE layers (averaged in by their share of the layers): K and the output projection are rerun there too, and
    every routed-expert GEMM, ``t_experts`` [s] (their forward time per micro-batch): TorchTitan's experts run
    ``torch._grouped_mm`` / ``torch.bmm`` (torchtitan/experiments/llama4/model/moe.py, e7c0cae, lines 60-85), which
    are not in ``_save_list``, so the policy returns PREFER_RECOMPUTE for them. The router's and the shared
    experts' ``aten.mm`` calls shift the parity of the count after them; they are not counted (a lower bound).
    A dense model: ``t_k + t_o + t_ffn``. The Q, K, V order assumes separate projections (Llama); a fused QKV
    projection would shift the parity (not modelled)."""
    a = ctx.arch
    h, f = float(a.hidden_size), float(a.ffn_hidden_size)
    t_k = gemm(M, h, a.kv_dim / tp)
    t_o = gemm(M, float(a.attention_output_dim()) / tp, h)
    t_ffn = gemm(M, h, f / tp) if a.ffn_type == "swiglu" else gemm(M, f / tp, h)
    moe_frac = a.moe_layers / a.layers
    return t_k + t_o + (1.0 - moe_frac) * t_ffn + moe_frac * t_experts


def layer_terms(ctx: Context, tp, cp, ep, mb, rc, sp, tpo):
    """Per transformer layer, per micro-batch, forward + backward [s]: GEMM/attention/element-wise
    compute, recomputation, exposed TP / CP / EP communication.

    Returns ``(train, recompute, t_tp, t_cp, t_ep, f_act)``: the five times [s] and the FFN width
    active per token (``f_act`` [elements]; the routed and shared experts' width for MoE), which
    :func:`layer_memory` takes. Elementwise over plan arrays that broadcast."""
    a, e = ctx.arch, ctx.eff
    full = rc == 2
    sel = rc == 1
    h, s = float(a.hidden_size), float(a.seq_length)
    heads = float(a.attention_heads)
    P, P16, B = ctx.peak_flops, ctx.peak16_flops, ctx.memory_bw
    casts = fp8_terms(ctx)
    # FP8 GEMMs at fp8_gemm_factor of the 16-bit efficiency against the FP8 peak (block-scaled recipes slower)
    eg = e.gemm_efficiency * (e.fp8_gemm_factor * casts.gemm_rate if casts is not None else 1.0)
    em, curve = e.memory_efficiency, ctx.gemm
    s_loc = s / cp
    M = mb * s_loc  # tokens per micro-batch per GPU
    moe_frac = a.moe_layers / a.layers
    dense_frac = 1.0 - moe_frac

    def gemm(Mx, K, N):
        return _gemm_time(Mx, K, N, P, eg, curve, B, em)

    q_out = float(a.attention_output_dim())
    attn_in_n = (a.attention_matmul_params_per_layer() - q_out * h) / h
    g_qkv = gemm(M, h, attn_in_n / tp)
    g_proj = gemm(M, q_out / tp, h)
    mats = 3 if a.ffn_type == "swiglu" else 2
    f = float(a.ffn_hidden_size)
    g_fc1 = gemm(M, h, (mats - 1) * f / tp)
    g_fc2 = gemm(M, f / tp, h)
    if a.is_moe:
        fe = float(a.expert_ffn_hidden_size or a.ffn_hidden_size)
        experts_local = a.num_experts / ep
        Me = np.maximum(M * a.experts_per_token * ep / a.num_experts, 1.0)
        t_routed = experts_local * (gemm(Me, h, (mats - 1) * fe / tp) + gemm(Me, fe / tp, h))
        t_shared = a.shared_experts * (gemm(M, h, (mats - 1) * fe / tp) + gemm(M, fe / tp, h))
        t_router = gemm(M, h, float(a.num_experts))
        t_ffn_moe = t_routed + t_shared + t_router
        f_act = (a.experts_per_token + a.shared_experts) * fe
    else:
        t_ffn_moe = t_routed = 0.0 * M
        f_act = f
    g_in = dense_frac * g_fc1 + moe_frac * 0.5 * t_ffn_moe  # the GEMMs beside the FFN collectives
    g_out = dense_frac * g_fc2 + moe_frac * 0.5 * t_ffn_moe
    t_gemm_layer = g_qkv + g_proj + g_in + g_out

    heads_loc = heads / tp
    score_flops = 2.0 * mb * s_loc * s * heads_loc * (a.qk_head_dim + a.value_head_dim)  # full s x s
    if ctx.flash_attention:
        # the kernel's rate at the sequence of one call (s_loc keys with context parallel), causal half [5]
        t_attn_fwd = (0.5 * score_flops / (P16 * e.flash_attention_efficiency)
                      * (1.0 + e.attention_half_rate_tokens / s_loc))
        attn_bwd_factor = e.flash_backward_factor
        attn_recompute = np.where(full, 1.0, 0.0)  # FlashAttention recomputes internally: selective is free
    else:
        dmin = float(min(a.qk_head_dim, a.value_head_dim))
        # Q K^T and A V as batched GEMMs: (mb heads s_loc) x d_head by d_head x s. The curve is
        # measured from 256 up; the head dimension (64-128) is read at 256, not extrapolated.
        shape = curve.shape_factor(mb * heads_loc * s_loc, s, max(dmin, CURVE_MIN_DIM), P16 / TERA)
        t_attn_fwd = (score_flops / (P16 * e.gemm_efficiency * shape)
                      + e.unfused_attention_bytes_per_score * mb * heads_loc * s_loc * s / (B * em))
        attn_bwd_factor = 2.0
        attn_recompute = np.where(full | sel, 1.0, 0.0)

    act_bytes = e.activation_bytes_per_ffn_swiglu if a.ffn_type == "swiglu" else e.activation_bytes_per_ffn_gelu
    ew_h, last_add_share = elementwise_terms(ctx)  # no dropout masks at hidden dropout 0
    ew_bytes = M * (ew_h * h / np.where(sp, tp, 1.0) + act_bytes * f_act / tp)
    t_ew_fwd = ew_bytes / (B * em)

    # FP8 training: the casts of the GEMM inputs (forward) and output gradients (backward) [21]
    cast_fwd, cast_bwd, cast_fc2 = (x / (B * em) for x in fp8_cast_bytes(ctx, M, tp, sp))

    train = (3.0 * (t_gemm_layer + t_ew_fwd + e.layer_overhead_s) + (1.0 + attn_bwd_factor) * t_attn_fwd
             + cast_fwd + cast_bwd)
    # Full recomputation repeats the forward [2]; with early stop [14] it ends at the last tensor the
    # backward saved, the input of the dense FFN's output projection: that GEMM (and its input's FP8 cast)
    # and the residual add after it are left out (MoE layers: nothing of the FFN, the routed combine saves
    # the experts' outputs).
    early = ctx.framework.checkpoint_early_stop
    skipped = (dense_frac * g_fc2 + cast_fc2 + last_add_share * M * ew_h * h
               / np.where(sp, tp, 1.0) / (B * em)) if early else 0.0
    recompute = (np.where(full, t_gemm_layer + t_ew_fwd + cast_fwd + e.layer_overhead_s - skipped, 0.0)
                 + attn_recompute * t_attn_fwd)
    if ctx.framework.selective_recompute == "every_second_mm":  # TorchTitan's op-level selective checkpointing [25]
        recompute = recompute + np.where(sel, every_second_mm_s(ctx, gemm, M, tp, t_routed), 0.0)

    # ---- tensor parallel -------------------------------------------------------------
    nvl_bw = ctx.nvlink_bw * e.nvlink_efficiency
    net_bw = ctx.nic_bw * e.network_efficiency
    tp_in_node = tp <= ctx.nvlink_domain
    tp_bw = np.where(tp_in_node, nvl_bw, net_bw)
    tp_alpha = np.where(tp_in_node, e.alpha_nvlink_s, e.alpha_network_s)
    act_size = M * h * BYTES_16
    c = _ring_gather(act_size, tp, tp_bw, tp_alpha)  # one all-gather or reduce-scatter of a layer activation
    if e.tp_overlap is not None:  # a fixed hidden fraction (training.efficiency override)
        # early stop: not the dense FFN output's reduce-scatter (c, with SP) or all-reduce (2c) [14]
        n_coll = 4.0 + np.where(full, 2.0 - (dense_frac * np.where(sp, 0.5, 1.0) if early else 0.0), 0.0)
        t_tp = (1.0 - e.tp_overlap) * n_coll * 2.0 * c
    else:
        kap = ctx.tp_terms.sm_contention
        n_rs = ctx.tp_terms.reduce_scatter_splits

        def hidden(cc, g, n_split):  # exposed part of a collective overlapped with GEMM g [9]
            return np.maximum(cc - g, 0.0) + cc / n_split + kap * np.minimum(cc, g)

        col = (g_qkv, g_in)
        row = (g_proj, g_out)
        # default Megatron [8]
        fwd_def = 4.0 * c
        bwd_sp = sum(c + 2.0 * hidden(c, g, np.inf) for g in col)  # row AG exposed; col AG/RS behind dgrad/wgrad
        bwd_nosp = sum(hidden(2.0 * c, g, np.inf) for g in col)  # col all-reduce behind wgrad
        bwd_def = np.where(sp, bwd_sp, bwd_nosp)
        # --tp-comm-overlap [9]
        fwd_ovl = sum(hidden(c, g, tp) for g in col) + sum(hidden(c, g, n_rs) for g in row)
        bwd_ovl = sum(hidden(c, g, tp) for g in row) + sum(2.0 * hidden(c, g, np.inf) for g in col)
        ovl = (tpo > 0) & sp & tp_in_node  # userbuffers run over NVLink only (plans.tp_overlap_reach)
        fwd = np.where(ovl, fwd_ovl, fwd_def)
        bwd = np.where(ovl, bwd_ovl, bwd_def)
        # full recomputation repeats the forward collectives; early stop not the dense FFN output's [14]:
        # its reduce-scatter (c, with SP; pipelined with the GEMM under tp_comm_overlap) or all-reduce (2c)
        last = np.where(ovl, hidden(c, g_out, n_rs), np.where(sp, c, 2.0 * c))
        fwd_re = fwd - (dense_frac * last if early else 0.0)
        t_tp = np.where(tp > 1, fwd + np.where(full, fwd_re, 0.0) + bwd, 0.0)

    dom = float(ctx.nvlink_domain)
    cp_in_node = tp * cp <= dom
    cp_bw = np.where(cp_in_node, nvl_bw, net_bw)
    kv_bytes = M * a.kv_heads * (a.qk_head_dim + a.value_head_dim) / tp * BYTES_16
    t_cp = np.where(cp > 1, (1.0 - e.cp_overlap) * 3.0 * (cp - 1) * (kv_bytes / cp_bw + e.alpha_network_s), 0.0)

    if a.is_moe:
        ep_in_node = tp * cp * ep <= dom
        ep_bw = np.where(ep_in_node, nvl_bw, net_bw)
        a2a = (ep - 1) / ep * M * a.experts_per_token * h * BYTES_16 / ep_bw
        n_a2a = 4.0 + np.where(full, 2.0, 0.0)
        t_ep = np.where(ep > 1, (1.0 - e.ep_overlap) * moe_frac * n_a2a * a2a, 0.0)
    else:
        t_ep = 0.0 * M
    return train, recompute, t_tp, t_cp, t_ep, f_act


#: What :func:`pipeline_schedule` returns, in this order.
PIPELINE_KEYS = ("t_emb", "t_out", "t_p2p", "phi", "raw_max", "which", "n_b", "extra_b", "t_max", "bubble", "t_pipe")


def pipeline_schedule(ctx: Context, q: dict[str, np.ndarray], M, m, t_layer, bottleneck: bool = True) -> dict[str, np.ndarray]:
    """The pipeline schedule of one step [s]: embedding, output layer and the point-to-point time a
    steady-state slot spends per micro-batch (all ``2 v`` transfers, or what the interleaved schedule's
    ``overlap_p2p_comm`` leaves exposed [26]; the bubble keeps its ``(p-1)/v`` slots' transfers and, with the
    overlap, the last stage's ``(v-1) p`` warm-up and cool-down chunks' transfers at full cost), the bottleneck stage's time (``raw_max``; ``t_max`` with the framework's slot
    factor), which stage it is (0 first, 1 middle, 2 last) and its layers, the bubble and
    ``t_pipe = m t_max + bubble`` [2, 10] (see the module docstring).

    ``q``: plan arrays; ``M``: tokens per micro-batch per GPU; ``m``: micro-batches; ``t_layer``:
    one layer's time per micro-batch; ``bottleneck=False`` leaves out which stage is the bottleneck
    (``which``, ``n_b``, ``extra_b``). Elementwise: the arrays may have any shapes that broadcast
    (the plan search passes plan dimensions on separate axes).
    """
    a, e, fw = ctx.arch, ctx.eff, ctx.framework
    tp, pp, dp, cp, vp, lf, ll, lm = (q[k] for k in ("tp", "pp", "dp", "cp", "vp", "lf", "ll", "lm"))
    h, V = float(a.hidden_size), float(a.vocab_size)
    B = ctx.memory_bw
    em = e.memory_efficiency
    L = float(a.layers)
    # embedding (gather forward, scatter-add backward) on the first stage; output layer and loss on the last.
    # The output layer runs in 16 bits with FP8 training too: Megatron-Core's output_layer is a plain
    # tensor_parallel.ColumnParallelLinear, not a Transformer Engine module (megatron/core/models/gpt/gpt_model.py,
    # core_r0.8.0), llm-foundry's MPT unembeds with F.linear on the tied embedding (SharedEmbedding,
    # llmfoundry/models/layers/custom_embedding.py, b2a43a1), TorchTitan leaves the output layer out of its float8
    # conversion (torchtitan/models/llama3/train_configs/llama3_8b.toml at e7c0cae: filter_fqns = ["output"])
    t_emb = 3.0 * BYTES_16 * M * h / (B * em)
    g_out = _gemm_time(M, h, V / tp, ctx.peak16_flops, e.gemm_efficiency, ctx.gemm, B, em)  # one output-layer GEMM
    t_out = 3.0 * g_out + e.cross_entropy_bytes_per_logit * M * V / tp / (B * em)

    nvl_bw = ctx.nvlink_bw * e.nvlink_efficiency
    net_bw = ctx.nic_bw * e.network_efficiency
    dom = float(ctx.nvlink_domain)
    act_size = M * h * BYTES_16
    pp_cross = tp * cp * dp >= dom
    pp_bw = np.where(pp_cross, net_bw, nvl_bw)
    boundary = act_size / np.where(pp_cross & fw.p2p_scatter_gather, tp, 1.0)
    t_p2p = np.where(pp > 1, 2.0 * vp * (e.alpha_network_s + boundary / pp_bw), 0.0)

    single = pp == 1
    phi = np.where(single, 1.0, fw.pipeline_stage_factor)
    # each stage's compute per micro-batch, without the transfers
    c_first = np.where(single, L * t_layer + t_emb + t_out, lf * t_layer + t_emb)
    c_last = np.where(single, c_first, ll * t_layer + t_out)
    c_mid = np.where(pp > 2, lm * t_layer, 0.0)
    c_max = np.maximum(np.maximum(c_first, c_last), c_mid)
    # interleaved schedule with overlap_p2p_comm [26]: in the steady state a forward chunk's transfer runs behind a
    # backward chunk (2/3 of c_max / vp), a backward chunk's behind a forward chunk (1/3); the bubble keeps the
    # transfers of its (p-1)/v slots, and the warm-up's and cool-down's further transfers are charged below
    x = t_p2p / np.maximum(2.0 * vp, 1.0)
    hidden_p2p, n_exposed = interleaved_p2p_overlap(x, c_max / vp, vp, pp, m)
    overlapped = fw.overlap_p2p_comm & (vp > 1) & (pp > 1)
    t_slot = np.where(overlapped, hidden_p2p, t_p2p)
    t_first = np.where(single, c_first, c_first + t_slot)
    t_last = np.where(single, t_first, c_last + t_slot)
    t_mid = np.where(pp > 2, c_mid + t_slot, 0.0)
    raw_max = np.maximum(np.maximum(t_first, t_last), t_mid)
    t_max = phi * raw_max
    t_sum = phi * (L * t_layer + t_emb + t_out + pp * t_p2p)
    full_max = phi * np.where(single, c_max, c_max + t_p2p)  # the slot with every transfer exposed (fill, drain)
    bubble = (t_sum - full_max) / vp
    # the overlap's warm-up and cool-down [26]: the last stage runs (v-1) p forward chunks in the warm-up and as many
    # backward chunks in the cool-down with their transfers waited with no compute between (schedules.py
    # core_r0.8.0: the warm-up waits the previous forward's handles at the top of the next iteration, the cool-down's
    # send_backward_recv_backward blocks), (v-1) p / v micro-batches' worth beyond the bubble's (p-1)/v; with
    # m = p every chunk is in the warm-up and cool-down (num_warmup_microbatches = total_num_microbatches)
    warm_cool = np.where(overlapped, phi * n_exposed * (t_p2p - t_slot), 0.0)
    bubble = bubble + warm_cool
    t_p2p = t_slot  # what a steady-state slot spends on transfers
    # the output layer's weight-gradient GEMMs deferred to the flush (Megatron-Core) [27]: the bottleneck's mean time
    # per micro-batch drops by ``saved``, the flush grows by ``drain``
    saved, drain = output_wgrad_deferral(ctx, g_out, m, t_first, t_mid, t_last, t_sum, phi, pp, vp, c_last=c_last, x=x)
    t_max = phi * (raw_max - saved)
    bubble = bubble + drain
    t_pipe = m * t_max + bubble
    out = {"t_emb": t_emb, "t_out": t_out, "t_p2p": t_p2p, "phi": phi, "raw_max": raw_max - saved, "t_max": t_max,
           "bubble": bubble, "t_pipe": t_pipe}
    if bottleneck:
        which = np.where(raw_max == t_last, 2, np.where(raw_max == t_first, 0, 1))  # 0 first, 1 middle, 2 last
        out["which"] = which
        out["n_b"] = np.where(which == 0, np.where(single, L, lf), np.where(which == 2, ll, lm))
        out["extra_b"] = np.where(single, t_emb + t_out,
                                  np.where(which == 0, t_emb, np.where(which == 2, t_out - saved, 0.0)))
    return out


def interleaved_p2p_overlap(x, chunk, vp, pp, m):
    """Megatron-Core's interleaved schedule with ``overlap_p2p_comm`` [26]: ``(t_slot, n_exposed)``.

    ``t_slot`` [s]: the transfer time a steady-state slot leaves exposed per micro-batch,
    ``v (max(0, x - 2 chunk/3) + max(0, x - chunk/3))``: a forward chunk's send/receive ``x`` [s] is waited
    before the next forward, after a backward chunk (2/3 of ``chunk``, one chunk's compute per micro-batch [s]),
    a backward chunk's before the next backward, after a forward chunk (1/3) (schedules.py core_r0.8.0
    l.916-1017). ``n_exposed`` [micro-batches]: the last stage's warm-up and cool-down chunks whose transfers
    are waited with no compute between, beyond the ``(p-1)/v`` of the bubble: ``(v-1) p`` forward chunks and as
    many backward chunks, ``(v-1) p / v`` micro-batches (l.650-652, 817-913, 1095-1120), all ``m`` when
    ``m <= p`` (every chunk in the warm-up, l.646-648). :func:`pipeline_schedule` adds
    ``phi n_exposed (2 v x - t_slot)`` to the bubble. Elementwise over arrays that broadcast.

    Worked case (against a step-by-step replay of that schedule's waits): p 8, v 4, m 32, a forward
    chunk 1, backward 2 (chunk 3), x 1.5: t_slot = 4 (0 + 0.5) = 2, n_exposed = 3 x 8 / 4 = 6; step
    32 (12 + 2) + 7/4 (12 + 12) + 6 (12 - 2) = 550 against the replay's 549.5.
    """
    t_slot = vp * (np.maximum(0.0, x - 2.0 * chunk / 3.0) + np.maximum(0.0, x - chunk / 3.0))
    n_exposed = np.where(m <= pp, m, np.minimum(m, (vp - 1.0) * pp / np.maximum(vp, 1.0)))
    return t_slot, n_exposed


def deferred_micro_batches(ctx: Context, m, pp):
    """Micro-batches of a step whose output-layer weight gradient the last stage defers to the flush [27]:
    ``k = min(m, limit)``, all ``m`` with ``wgrad_deferral_limit`` 0 (Megatron-Core: "0, which means all
    micro-batches are deferred"), none without pipeline parallelism. ``m``: micro-batches per step. Elementwise."""
    limit = float(ctx.wgrad_deferral_limit)
    return np.where(pp > 1, m if limit <= 0.0 else np.minimum(m, limit), 0.0)


def output_wgrad_deferral(ctx: Context, g, m, t_first, t_mid, t_last, t_sum, phi, pp, vp, c_last=None, x=0.0):
    """Megatron-Core's deferral of the output layer's weight-gradient GEMMs to the pipeline flush [27]:
    ``(saved, drain)`` [s], the drop of the bottleneck stage's mean time per micro-batch (before the
    framework's slot factor ``phi``) and the deferred GEMMs' time that the flush does not hide.

    With ``ctx.defer_output_wgrad`` and pipeline parallelism, the last stage skips the weight-gradient GEMM
    ``g`` [s] (one of the output layer's three GEMMs, M x h x V/t) in the backward of the first
    ``k = min(m, limit)`` of the step's ``m`` micro-batches (``limit = ctx.wgrad_deferral_limit``, 0: k = m)
    and runs the k GEMMs after its last backward, while the stages before it run their last backwards:
    the idle time of the last stage at the end of the flush: the other stages' last chunk backwards, the backward
    share 2/3 of their compute per micro-batch over the ``v = vp`` model chunks, and the ``p - 1`` blocking
    cool-down transfers of one chunk's activation gradient ``x`` [s] each (schedules.py core_r0.8.0 cool-down:
    ``send_backward_recv_backward`` without ``overlap_p2p_comm``, so at full cost with the overlap too [26]),
    ``i = phi (2/3 C_o / v + (p - 1) x)`` [s] with ``C_o = t_sum / phi - c_last - 2 p v x`` the other stages'
    compute per micro-batch [s] (``t_sum`` holds every stage's ``2 v`` transfers at full cost); ``c_last``: the
    last stage's compute per micro-batch [s] (default ``t_last``, with ``x = 0``: ``i = 2/3 (t_sum - phi t_last) / v``,
    the cool-down half of :func:`pipeline_schedule`'s bubble; the same 2/3 as :func:`dp_exposed`).

    * ``saved = k / m (r - max(t_last - g, max(t_first, t_mid)))`` with ``r = max(t_first, t_mid, t_last)``:
      a deferred micro-batch's step is set by the last stage without the GEMM or by the slowest other stage,
      whichever is longer; nothing is saved when the last stage is not the bottleneck.
    * ``drain = max(0, k g - i)``: the deferred GEMMs run back to back (drain_embedding_wgrad_compute) and
      only their excess over the idle time delays the step.

    So when the last stage stays the bottleneck the step changes by ``drain - phi k g`` (``-min(k g, i)`` for
    phi = 1), and when it is not the bottleneck it can only lengthen (by ``drain``). ``t_first``, ``t_mid``,
    ``t_last``: the stages' times per micro-batch before ``phi`` [s]; ``t_sum``: all stages' with ``phi`` [s];
    ``m``: micro-batches per step. The sequence-parallel all-gather of the GEMM's input runs in the drain as
    it would in the backward (double-buffered behind the previous GEMM) and is not moved. Elementwise over
    arrays that broadcast; ``(0, 0)`` without deferral.

    Worked case (by hand): p = 8, v = 5, m = 128, k = 22 (NeMo's limit), phi = 1, t_first = t_mid = 0.1480 s,
    t_last = 0.1717 s, g = 0.0080 s, t_sum = 7 x 0.1480 + 0.1717 = 1.2077 s: deferred micro-batches at
    max(0.1637, 0.1480) = 0.1637 s, saved = 22 / 128 x 0.0080 = 0.001375 s per micro-batch (0.176 s a step);
    i = 2/3 x 1.036 / 5 = 0.13813 s against k g = 0.176 s: drain = 0.03787 s; the step shortens by
    0.176 - 0.03787 = 0.13813 s = i.
    """
    if not ctx.defer_output_wgrad:
        return 0.0, 0.0
    m = np.asarray(m, dtype=float)
    k = deferred_micro_batches(ctx, m, pp)
    others = np.maximum(t_first, t_mid)
    r = np.maximum(others, t_last)
    saved = k / m * (r - np.maximum(t_last - g, others))
    if c_last is None:
        c_last = t_last
    c_others = t_sum / phi - c_last - 2.0 * pp * vp * x
    idle = phi * ((2.0 / 3.0) * c_others / vp + (pp - 1.0) * x)
    drain = np.maximum(0.0, k * g - idle)
    return saved, drain


def last_bucket_params(bucket_params, per_dp_rank, n_dp, emb_p):
    """Parameters in the last gradient reduction of a step with overlapped data-parallel reduction [parameters]
    [11]: ``max(bucket_params, per_dp_rank x n_dp, emb_p)``.

    Megatron-Core's ``ParamAndGradBuffer`` fills buckets with the parameters in reverse order ("to roughly follow
    backprop order"), never splits a parameter and closes a bucket once it holds at least ``bucket_size``
    (max(40M, 1M x DP)) parameters (megatron/core/distributed/param_and_grad_buffer.py, core_r0.8.0), so the
    input embedding, the model's first parameter, ends in the last bucket whole; Apex's DistributedFusedAdam
    (NeMo 1.x) splits parameters into fragments across fixed-size buckets ("Each fragment resides within a
    bucket", apex/contrib/optimizers/distributed_fused_adam.py ``_init_param_state``, 6424da3b), but a bucket
    is reduced once all of its gradients are ready, and the embedding's gradient is the backward's last
    (its lookup is the forward's first op), so its buckets are reduced after the backward either way.
    ``emb_p``: the input embedding's parameters on the stage [parameters] (a tied output layer shares that
    weight, and its gradient is complete only then too). Elementwise over arrays that broadcast.

    Worked case (by hand): Megatron-Core GPT, vocabulary 131,072, hidden 2,048, TP 1, DP 48: bucket
    max(4e7, 48 x 1e6) = 4.8e7 against the embedding's 131,072 x 2,048 = 268,435,456: 268,435,456."""
    return np.maximum(np.maximum(bucket_params, per_dp_rank * n_dp), emb_p)


def root_unit_params(emb_p, out_last, single, p_first, p_last):
    """Parameters of the FSDP root unit of the largest pipeline stage [parameters]: what the frameworks that wrap
    one transformer layer per unit (``dp_last_reduction: root_unit``: llm-foundry / Composer's FSDP, TorchTitan's FSDP2)
    leave to the root module [13]: the input embedding, and with it on a single stage the final norm and the untied
    output layer (``out_last``: the final norm alone when tied). The root's gradients are reduced as one unit once
    all of them are computed, and the embedding's is the backward's last (its lookup is the forward's first op), so
    the output layer's gradient, computed first, waits with it. TorchTitan applies ``fully_shard`` to each
    TransformerBlock and then to the whole model (torchtitan/models/llama3/parallelize_llama.py ``apply_fsdp``,
    e7c0cae, lines 344-367), whose remaining parameters are ``tok_embeddings``, ``norm`` and ``output``;
    llm-foundry wraps each MPTBlock (``fsdp_wrap_fn``, data/training_frameworks.yaml ``fsdp``). With pipeline parallelism the first stage's root holds the
    embedding, the last stage's the final norm and output layer: the largest stage's (``p_first`` / ``p_last``) is
    taken. ``emb_p``, ``out_last``: parameters [parameters]; ``single``: no pipeline parallelism. Elementwise.

    Worked case (by hand): Llama 3.1 8B (vocabulary 128,256, hidden 4,096, untied), TP 1, one stage:
    525,336,576 + 525,336,576 + 4,096 = 1,050,677,248."""
    return np.where(single, emb_p + out_last, np.where(p_last >= p_first, out_last, emb_p))


def dp_exposed(t_grad, t_param, t_max, bucket, pp, vp):
    """Exposed data-parallel gradient reduction and parameter all-gather with Megatron-Core's overlap
    (``overlap_grad_reduce``, ``overlap_param_gather``) [s]: ``(grad, param)``.

    ``t_grad`` / ``t_param``: the whole reduction / all-gather of the stage's parameters [s]; ``t_max``: one
    micro-batch of the bottleneck stage, forward ``t_max / 3`` and backward ``w = 2 t_max / 3`` [s];
    ``bucket``: the share of the stage's parameters in one bucket; ``pp`` (p), ``vp`` (v): pipeline stages
    and model chunks per stage. Elementwise over arrays that broadcast.

    * One chunk (v = 1) [11]: the buckets are reduced as their gradients of the last micro-batch come
      ready, behind its backward, the last bucket never hidden: ``max(t_grad - w, bucket t_grad)``; the
      all-gather likewise behind the first forward, ``max(t_param - t_max / 3, bucket t_param)``.
    * Interleaved schedule (v > 1) [19, 24]: each of the v chunks (1/v of the stage's parameters,
      ``c = t_grad / v``) is reduced when its last micro-batch's backward is done (``grad_sync_func``, all
      pipeline ranks at the first stage's time), on one communicator, so one after another. The chunks'
      last backwards come in the cool-down, chunk v-1 first and chunk 0 last; after the i-th chunk from
      the end (i = 0: chunk 0) the stage still runs ``i p`` backwards of one chunk (``w / v`` each). The
      reductions in flight end ``max_i ((i + 1) c - i p w / v)`` after the last backward, linear in i,
      so ``max(t_grad / v, t_grad - (v - 1) p w / v)``: chunk 0's reduction is always exposed.
      The all-gathers (``param_sync_func``, ``a = t_param / v`` each, forward of one chunk
      ``f = t_max / (3 v)``): chunks 0 and 1 are gathered at the start, chunk c >= 2 when chunk c-1's first
      forward starts, p chunk-forwards before chunk c's first forward on the first stage. Chunk 0 is
      bucketed behind its own first forward, ``e_0 = max(a - f, min(a, bucket t_param))``; chunk 1 waits
      for chunk 0's gather, and every later chunk's gather longer than p forwards delays the forwards:
      ``max(e_0, 2 a - p f) + (v - 2) max(0, a - p f)``.

    Worked case (by hand): p = 4, v = 3, t_max = 0.3 s (w = 0.2 s, w / v = 0.0667 s), t_grad = 1.2 s
    (c = 0.4 s): chunks 2, 1, 0 finish their last backward 8, 4 and 0 chunk-backwards before the end
    (-0.533, -0.267, 0 s); their reductions run -0.533 to -0.133, -0.133 to 0.267 and 0.267 to 0.667 s:
    0.667 s exposed = 1.2 - 2 x 4 x 0.2 / 3 (one chunk: max(1.2 - 0.2, bucket x 1.2) = 1.0 s). All-gather
    t_param = 0.6 s (a = 0.2 s, f = 0.0333 s, p f = 0.133 s), bucket 0.05: e_0 = max(0.167, 0.03) = 0.167 s;
    chunk 1's first forward at max(0.167 + 0.133, 0.4) = 0.4 s, chunk 2's at 0.4 + max(0.133, 0.2) =
    0.6 s against 0.267 s: 0.333 s exposed = max(0.167, 0.4 - 0.133) + 1 x (0.2 - 0.133).
    """
    w_bwd = t_max * (2.0 / 3.0)  # backward of one micro-batch of the stage [11]
    w_fwd = t_max / 3.0  # its forward
    v = np.maximum(np.asarray(vp, dtype=float), 1.0)
    chunked = v > 1.0
    grad_one = np.maximum(t_grad - w_bwd, bucket * t_grad)
    grad_chunks = np.maximum(t_grad / v, t_grad - (v - 1.0) * pp * w_bwd / v)
    param_one = np.maximum(t_param - w_fwd, bucket * t_param)
    a, pf = t_param / v, pp * w_fwd / v
    e0 = np.maximum(a - w_fwd / v, np.minimum(a, bucket * t_param))
    param_chunks = np.maximum(e0, 2.0 * a - pf) + (v - 2.0) * np.maximum(0.0, a - pf)
    return np.where(chunked, grad_chunks, grad_one), np.where(chunked, param_chunks, param_one)


def step_time(ctx: Context, t_pipe, t_dp, t_opt):
    """Step time and its fixed-fraction overhead [s] from the pipeline, the exposed data-parallel
    communication, the optimizer and the framework's fixed time per step (``step_fixed_s`` >= 0).
    Returns ``(step, overhead)`` [s]. Non-decreasing in each term (the plan search's bound reads
    ``t_dp = t_opt = 0``)."""
    base = t_pipe + t_dp + t_opt + ctx.framework.step_fixed_s
    overhead = ctx.eff.step_overhead * base
    return base + overhead, overhead


def _evaluate(ctx: Context, plans: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    a, e, fw = ctx.arch, ctx.eff, ctx.framework
    q = plan_arrays(plans)
    tp, pp, dp, cp, ep, mb, gbs, vp = (q[k] for k in ("tp", "pp", "dp", "cp", "ep", "mb", "gbs", "vp"))
    rc, sp, zero, dopt, tpo, lf, ll, lm = (q[k] for k in ("rc", "sp", "zero", "dopt", "tpo", "lf", "ll", "lm"))
    once_a_step = pipelined_fsdp2(ctx, zero, pp)  # one gradient reduction a step, after the last backward
    zero = pipeline_zero(ctx, zero, pp)

    s = float(a.seq_length)
    B = ctx.memory_bw
    em = e.memory_efficiency
    gpn = float(ctx.gpus_per_node)
    L = float(a.layers)

    m = gbs / (dp * mb)  # micro-batches per step per pipeline
    s_loc = s / cp
    M = mb * s_loc

    # the per-layer terms depend on (tp, cp, ep, mb, rc, sp, tpo) only: computed once per distinct
    # combination and gathered back (a search has ~10^5 plans but ~10^3 such combinations)
    key = (((((tp * 1025.0 + cp) * 1025.0 + ep) * 8193.0 + mb) * 3.0 + rc) * 2.0 + sp) * 2.0 + tpo
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    parts = layer_terms(ctx, tp[first], cp[first], ep[first], mb[first], rc[first], sp[first], tpo[first])
    train, recomp, t_tp, t_cp, t_ep = (np.asarray(x, dtype=float)[inverse] for x in parts[:5])
    f_act = parts[5]
    a_mem = layer_memory(ctx, mb[first], s_loc[first] if np.ndim(s_loc) else s_loc, tp[first], sp[first],
                          rc[first], f_act)
    per_layer_act, rebuilt_act = (np.asarray(x, dtype=float)[inverse] for x in a_mem)
    # FP8 weight casts: once per global batch (spread over its m micro-batches) or every micro-batch [21]
    train = train + fp8_weight_cast_s(ctx, tp, ep, m)
    t_layer = train + recomp + t_tp + t_cp + t_ep

    pl = pipeline_schedule(ctx, q, M, m, t_layer)
    t_emb, t_out, t_p2p, phi, raw_max, which, n_b, extra_b, t_max, bubble, t_pipe = (pl[k] for k in PIPELINE_KEYS)
    nvl_bw = ctx.nvlink_bw * e.nvlink_efficiency
    net_bw = ctx.nic_bw * e.network_efficiency
    dom = float(ctx.nvlink_domain)
    single = pp == 1

    # ---- data parallel -------------------------------------------------------------
    lp = layer_params(ctx, tp, ep)
    emb_p, out_p = embedding_params(ctx, tp)
    out_last = np.where(single, final_norm_params(ctx, tp) if a.tied_embeddings else out_p, out_p)
    n_first = np.where(single, L, lf)
    n_last = np.where(single, n_first, ll)
    n_mid = np.where(pp > 2, lm, 0.0)
    p_first = n_first * lp + emb_p + np.where(single, out_last, 0.0)
    p_last = np.where(single, p_first, ll * lp + out_last)
    p_mid = n_mid * lp
    p_gpu = np.maximum(np.maximum(p_first, p_last), p_mid)
    # elements of the parameter all-gathers that travel in one byte: with FP8 primary weights the layers'
    # GEMM weights (their stage's layers; embedding, output layer, norms and router stay 16-bit) [24]
    if ctx.fp8 and ctx.fp8_params:
        lg = layer_gemm_params(ctx, tp, ep)
        fp8_first, fp8_last, fp8_mid = n_first * lg, n_last * lg, n_mid * lg
    else:
        fp8_first = fp8_last = fp8_mid = 0.0 * p_gpu

    def gather_bytes(b16, fp8=True):  # the largest stage's all-gather bytes, ``b16`` bytes per element not in FP8
        k = (b16 - 1.0) * float(fp8)
        return np.maximum(np.maximum(b16 * p_first - k * fp8_first, b16 * p_last - k * fp8_last),
                          b16 * p_mid - k * fp8_mid)
    n_dp = dp * cp
    per_node = np.minimum(n_dp, np.maximum(1.0, np.floor(gpn / tp)))
    in_node = tp * n_dp <= dom
    hier_bw = np.minimum(nvl_bw, per_node * net_bw)
    dp_bw = np.where(in_node, nvl_bw, net_bw if ctx.flat_collectives else hier_bw)
    nodes_in_group = np.maximum(1.0, n_dp / per_node)
    dp_alpha = np.where(in_node, e.alpha_nvlink_s, e.alpha_network_s)
    gbytes = fw.grad_reduce_bytes
    sharded = (zero >= 1) | dopt
    t_grad = np.where(sharded, _ring_gather(p_gpu * gbytes, n_dp, dp_bw, dp_alpha),
                      _ring_allreduce(p_gpu * gbytes, n_dp, dp_bw, dp_alpha))
    t_param = np.where(sharded, _ring_gather(gather_bytes(BYTES_16), n_dp, dp_bw, dp_alpha), 0.0)
    if e.dp_overlap is not None:  # a fixed hidden fraction (parallelism.dp_overlap)
        exposed_grad = (1.0 - e.dp_overlap) * (t_grad + t_param)
    else:
        # the last reduction holds at least the input embedding, whose gradient the backward computes last [11];
        # FSDP frameworks (one layer per unit, ``dp_last_reduction: root_unit``) the root unit (:func:`root_unit_params`) [13]
        last_p = root_unit_params(emb_p, out_last, single, p_first, p_last) if fw.dp_last_reduction == "root_unit" \
            else emb_p
        bucket = np.minimum(1.0, last_bucket_params(fw.bucket_params, fw.bucket_params_per_dp_rank, n_dp, last_p)
                            / p_gpu)
        ex_grad, ex_param = dp_exposed(t_grad, t_param, t_max, bucket, pp, vp)
        # FSDP2 under torch.distributed.pipelining: the reduction runs after the last backward, exposed
        exposed_grad = (np.where(once_a_step, t_grad, ex_grad if ctx.overlap_grad_reduce else t_grad)
                        + (ex_param if ctx.overlap_param_gather else t_param))
    # ZeRO-3: per micro-batch, gather the parameters for forward and for backward and reduce-scatter
    # the gradients, in the framework's gather and reduction precisions [4, 16] (FP8 weights in one byte [24]).
    L_s = np.where(single, L, L / pp)
    # ring latency of one pass over the layers, one collective a layer: NCCL's n - 1 ring steps, nodes - 1 of them
    # across the network (src/graph/tuning.cc, gpucluster_lib.training.comm [3])
    z3_lat = L_s * ring_steps_latency_s(n_dp, np.where(in_node, 1.0, nodes_in_group), e.alpha_nvlink_s,
                                        e.alpha_network_s)
    t_ag = _ring_gather(gather_bytes(fw.zero3_gather_bytes, zero3_fp8(ctx)), n_dp, dp_bw, 0.0) + z3_lat  # one pass
    t_rs = _ring_gather(p_gpu * fw.zero3_reduce_bytes, n_dp, dp_bw, 0.0) + z3_lat  # the reduce-scatter
    t_z3 = m * (2.0 * t_ag + t_rs)
    compute_total = t_pipe
    if fw.zero3_prefetch == "unit":  # PyTorch FSDP: one unit (layer) ahead, one NCCL stream [13]
        unit = L_s * lp / p_gpu  # the layers' share of the stage's parameters; the rest is the root unit
        a_l, r_l = t_ag * unit / L_s, t_rs * unit / L_s  # one layer's gather and reduce-scatter
        exposed_z3 = m * (fsdp_exposed(train / 3.0, train - train / 3.0 + recomp, a_l, r_l, L_s,
                                       fw.backward_prefetch != "none")
                          + (t_ag + t_rs) * (1.0 - unit))
    elif fw.zero3_prefetch == "module":  # DeepSpeed: the next module's gather runs behind this one [12]
        g_pass = t_ag / L_s  # one pass of gathers, per layer
        fwd_c = train / 3.0
        # a module is prefetched only while fewer than stage3_max_live_parameters are gathered [17, 18];
        # lp depends on (tp, ep) only: the flags per distinct layer combination, gathered back
        pf_f, pf_b = (_plan_flags(prefetched_modules(ctx, lp[first], backward=b), inverse) for b in (False, True))
        exposed_z3 = m * L_s * (_prefetch_pass(ctx, fwd_c, g_pass, pf_f)
                                + np.where(rc == 2, _prefetch_pass(ctx, recomp, g_pass, pf_f)
                                           + _backward_pass(ctx, train - fwd_c, 0.0, t_rs / L_s, pf_b),
                                           _backward_pass(ctx, train - fwd_c + recomp, g_pass, t_rs / L_s, pf_b))
                                - train - recomp)
    else:
        exposed_z3 = np.maximum(t_z3 - e.zero3_overlap * compute_total, (1.0 - e.zero3_overlap) * t_z3)
    t_dp = np.where(zero == 3, exposed_z3, exposed_grad)

    # ---- optimizer ------------------------------------------------------------------
    p_opt = np.where(sharded, p_gpu / n_dp, p_gpu)
    t_opt = p_opt * e.optimizer_bytes_per_param / (B * em)

    step, overhead = step_time(ctx, t_pipe, t_dp, t_opt)

    breakdown = {
        "compute": m * (n_b * train + extra_b),
        "recompute": m * n_b * recomp,
        "tp_comm": m * n_b * t_tp,
        "cp_comm": m * n_b * t_cp,
        "ep_comm": m * n_b * t_ep,
        "pp_comm": m * t_p2p,
        "bubble": bubble,
        "dp_comm": t_dp,
        "optimizer": t_opt,
        "framework": m * (phi - 1.0) * raw_max + fw.step_fixed_s,
        "overhead": overhead,
    }

    memory, mem_stage = plan_memory(ctx, q, per_layer_act, rebuilt_act)
    return {"step_time_s": step, "micro_batches": m, "breakdown": breakdown, "memory": memory,
            "fits": memory["total"] <= ctx.memory_capacity, "memory_stage": mem_stage,
            "bottleneck_stage": np.where(which == 0, 0.0, np.where(which == 2, pp - 1.0, 1.0)),
            "stage_terms": {"t_layer": t_layer, "t_emb": t_emb, "t_out": t_out, "t_p2p": t_p2p, "phi": phi}}


def memory_stages(ctx: Context, q: dict[str, np.ndarray], per_layer, rebuilt) -> tuple[MemoryCommon, tuple]:
    """The terms shared by every pipeline stage's memory, and the arguments of
    :meth:`MemoryCommon.stage` for the stages that can need the most: the first, stage 1 (the
    middle stage with the most micro-batches in flight; meaningful for PP > 2) and the last (PP > 1).

    Stage 1 is charged the most layers of any middle stage (``lm``): the layouts made here put the
    extra layers on the earliest middle stages, so stage 1 holds ``lm`` and this is its memory. For the
    scenario's own ``parallelism.pipeline_layers`` (``ctx.pipeline_layers``) whose middle stages differ,
    the middle stage returned is the one that holds the most (:func:`_largest_middle_stage`), so the
    plan's memory is that of its fullest stage, as :func:`stage_table` gives every stage's own memory.

    ``q``: plan arrays; ``per_layer`` / ``rebuilt``: one layer's activation bytes
    (:func:`layer_memory`). Elementwise: the arrays may have any shapes that broadcast (the
    plan search passes plan dimensions on separate axes).
    """
    a = ctx.arch
    tp, pp, dp, cp, ep, mb, gbs, vp = (q[k] for k in ("tp", "pp", "dp", "cp", "ep", "mb", "gbs", "vp"))
    L = float(a.layers)
    single = pp == 1
    lp = layer_params(ctx, tp, ep)
    emb_p, out_p = embedding_params(ctx, tp)
    out_last = np.where(single, final_norm_params(ctx, tp) if a.tied_embeddings else out_p, out_p)
    common = MemoryCommon(ctx, tp, pp, mb, float(a.seq_length) / cp, q["zero"], dp * cp, q["dopt"], gbs / (dp * mb),
                           vp, lp, emb_p, out_last, per_layer, rebuilt, layer_gemm_params(ctx, tp, ep), q["sp"])
    middle = (np.maximum(q["l1"], q["lm"]), 1.0, False, False)
    given = ctx.pipeline_layers
    if given is not None and len(given) > 3 and len(set(given[1:-1])) > 1:
        middle = _largest_middle_stage(common, given, pp, middle)
    return common, ((np.where(single, L, q["lf"]), 0.0, True, single), middle, (q["ll"], pp - 1.0, False, True))


def _largest_middle_stage(common: MemoryCommon, given: tuple[int, ...], pp, bound: tuple) -> tuple:
    """The :meth:`MemoryCommon.stage` arguments of the middle stage of layout ``given`` that holds the most model
    states and activations (layers and index, arrays over the plans), for the plans with ``len(given)`` stages;
    ``bound`` for the others. A stage holds more with more layers and with more micro-batches in flight, which
    never grow with the stage index (:func:`~.memory.in_flight_factor`), so only a stage with more layers than
    every middle stage before it can hold the most: those are compared."""
    best = layers = index = None
    most = 0
    for i, n in enumerate(given[1:-1], start=1):
        if n <= most:
            continue
        most = n
        held = common.held(float(n), float(i), False, False)
        total = held["model"] + held["activations"]
        if best is None:
            best, layers, index = total, np.full_like(total, float(n)), np.full_like(total, float(i))
        else:
            more = total > best
            best, layers, index = np.where(more, total, best), np.where(more, float(n), layers), \
                np.where(more, float(i), index)
    on = np.asarray(pp) == len(given)
    return np.where(on, layers, bound[0]), np.where(on, index, bound[1]), False, False


def stage_memories(ctx: Context, q: dict[str, np.ndarray], per_layer, rebuilt) -> tuple[dict[str, np.ndarray], ...]:
    """Memory per GPU [B] by part of the stages that can need the most: the first, the middle stage
    that holds the most (stage 1 of the layouts made here; meaningful for PP > 2) and the last
    (PP > 1). Arguments as :func:`memory_stages`."""
    common, stages = memory_stages(ctx, q, per_layer, rebuilt)
    return tuple(common.stage(*args) for args in stages)


def plan_memory(ctx: Context, q: dict[str, np.ndarray], per_layer, rebuilt) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Memory per GPU [B] by part of the pipeline stage that needs the most of
    :func:`stage_memories` (its ``total`` is the largest stage total), and that stage's index."""
    pp = q["pp"]
    common, stages = memory_stages(ctx, q, per_layer, rebuilt)
    m0, m1, mL = (common.stage(*args) for args in stages)
    t0, t1, tL = m0["total"], np.where(pp > 2, m1["total"], -1.0), np.where(pp > 1, mL["total"], -1.0)
    pick = np.where((tL > t0) & (tL >= t1), 2, np.where(t1 > t0, 1, 0))
    memory = {k: np.where(pick == 0, m0[k], np.where(pick == 1, m1[k], mL[k])) for k in m0}
    mem_stage = np.where(pick == 0, 0.0, np.where(pick == 1, stages[1][1], pp - 1.0))
    return memory, mem_stage


def module_shares(ctx: Context) -> tuple[float, ...]:
    """Parameter shares of a layer's four weight modules in forward order: QKV, output
    projection, FC1 (with the gate for SwiGLU), FC2 [fractions]."""
    a = ctx.arch
    h, f = float(a.hidden_size), float(a.ffn_hidden_size)
    q_out = float(a.attention_output_dim())
    qkv = a.attention_matmul_params_per_layer() - q_out * h
    mats = 3 if a.ffn_type == "swiglu" else 2
    n = (qkv, q_out * h, (mats - 1) * f * h, f * h)
    return tuple(x / sum(n) for x in n)


def _backward_pass(ctx: Context, compute, gather, reduce, prefetched=None):
    """One backward pass over a layer's modules under DeepSpeed ZeRO-3 [s] [12, 15]:
    ``sum_j max(c w_j, a w_(j-1) + r w_(j+2))`` over QKV, projection, FC1, FC2 (index j, shares
    ``w``: :func:`module_shares`; the pass runs from FC2 down, indices modulo 4 reach the
    neighbouring layers). ``c``, ``a``, ``r``: the layer's backward compute, parameter gather and
    gradient reduce-scatter in this pass (``a`` 0 when the recomputed forward has gathered them).
    When module j-1 is not prefetched (``prefetched``: one flag per module,
    :func:`prefetched_modules` with ``backward=True``; None: all are) its gather is issued only
    after module j's compute and the reduce-scatter beside it have finished (``_allgather_param``
    synchronises the device first [18]): ``max(c w_j, r w_(j+2)) + a w_(j-1)``.

    While module j computes, the next module down (j-1) is gathered, and the reduce-scatter in
    flight is that of module j+2, two modules back: a module's gradients are reduced when the
    next gradient reaches the bucket (``reduce_bucket_size``, 5e8 elements, smaller than these
    weights), and issuing that reduction first waits for the previous one
    (``reduction_stream.synchronize()``), so the reduction of j+1 is issued only after module j
    has been queued and runs behind module j-1 [15]. Compute 24, gathers 6, reduce-scatters 18
    with shares 3/12, 1/12, 4/12, 4/12: max(6, 2 + 6) + max(2, 1.5 + 6) + max(8, 0.5 + 4.5)
    + max(8, 2 + 1.5) = 31.5. With the projection not prefetched behind FC1, FC1's term becomes
    max(8, 18 x 3/12) + 0.5 = 8.5 and the pass 32."""
    w = module_shares(ctx)
    n = len(w)
    total = 0.0
    for j in range(n):
        c, a, r = compute * w[j], gather * w[(j - 1) % n], reduce * w[(j + 2) % n]
        if prefetched is None:
            total = total + np.maximum(c, a + r)
        else:
            total = total + np.where(prefetched[(j - 1) % n], np.maximum(c, a + r), np.maximum(c, r) + a)
    return total


def fsdp_exposed(fwd, bwd, a, r, n, prefetch: bool = True):
    """Exposed PyTorch FSDP communication of one micro-batch over ``n`` units (transformer layers)
    [s] [13]: ``fwd`` / ``bwd`` one unit's forward and backward compute (the recomputed forward
    inside the backward: the checkpoint wrapper sits inside the unit, so it runs on the backward's
    gather), ``a`` / ``r`` one unit's parameter all-gather and gradient reduce-scatter.

    Forward (implicit prefetch): the gather of unit i+1 runs beside the compute of unit i, the first
    gather is exposed: ``a + (n-1) max(f, a) + f``. Every collective of a rank runs on one NCCL
    stream, in issue order. With backward prefetch (BACKWARD_POST, Composer's default, or
    BACKWARD_PRE) the gather of unit i-1 is issued before the reduce-scatter of unit i; the gather
    does not wait for unit i's compute on the GPU, only for the collectives ahead of it on the NCCL
    stream, the reduce-scatter of unit i+1 (queued when unit i+1's gradients were computed, it
    waits for them). With ``limit_all_gathers`` the CPU issues it once unit i+1's compute has
    finished, i.e. when unit i starts computing. So unit i computes beside the reduce-scatter of
    i+1 and the gather of i-1: ``a + max(b, a) + (n-2) max(b, a + r) + max(b, r) + r`` (the first
    gather and the last reduce-scatter exposed; n >= 2, ``a + b + r`` for one unit). Without
    backward prefetch the gather of unit i-1 is issued after unit i's reduce-scatter and waits
    for it: ``n (a + b + r)`` ("0 overlap", PyTorch FSDP notes). Returns that minus the compute
    ``n (f + b)``, never negative.

    Worked case, n = 3, f = 2, b = 4, a = 3, r = 5: forward 3 + 2 x 3 + 2 = 11; backward
    3 + 4 + 8 + 5 + 5 = 25, exposed 11 + 25 - 18 = 18; without prefetch 3 x 12 = 36, exposed 29."""
    n = np.asarray(n, dtype=float)
    t_fwd = a + (n - 1.0) * np.maximum(fwd, a) + fwd
    if prefetch:
        t_bwd = np.where(n >= 2.0, a + np.maximum(bwd, a) + np.maximum(n - 2.0, 0.0) * np.maximum(bwd, a + r)
                         + np.maximum(bwd, r) + r, a + bwd + r)
    else:
        t_bwd = n * (a + bwd + r)
    return np.maximum(t_fwd + t_bwd - n * (fwd + bwd), 0.0)


def gather_buffer_layers(ctx: Context) -> float:
    """ZeRO-3's gathered parameters at their peak, in layers' worth of parameters [layers], for
    the frameworks that gather a wrapped unit: FSDP gathers one unit (a layer) while the next one is
    prefetched: 2. DeepSpeed (``zero3_prefetch: module``) is :func:`deepspeed_zero3_buffers`."""
    return 2.0


def reduce_queue_bytes(ctx: Context, lp):
    """Unsharded ZeRO-3 gradients a framework of ``zero3_prefetch: unit`` holds at the backward peak [B]: the
    framework's ``zero3_reduce_queue_layers`` layers of ``lp`` parameters per GPU in the reduction precision
    ``zero3_reduce_bytes``. Megatron-FSDP (NeMo): each parameter's ``main_grad`` fetches its unit's full gradient
    bucket (``main_grad_getter`` -> ``fetch_bucket``, megatron/core/distributed/custom_fsdp/param_and_grad_buffer.py,
    Megatron-LM 3cdfd613, lines 1237-1242), freed when the unit's reduce-scatter leaves the queue, which holds up
    to ``suggested_RS_queue_capacity`` elements, twice a unit's (fully_sharded_data_parallel.py lines 219-226;
    ``wait_for_previous_grad_reduce``: "while queue_space > suggested_queue_capacity", param_and_grad_buffer.py
    lines 1636-1648): 2 layers, a lower bound (the unit being computed adds its own bucket). 0 for frameworks
    whose source was not read for it (PyTorch FSDP, TorchTitan). Elementwise over ``lp``.

    Worked case (by hand): GPT-3 175B (h 12,288, 4h FFN: 12 h^2 + 13 h = 1,812,099,072 parameters a layer) at
    TP 1, 2 layers in 16 bits: 2 x 1,812,099,072 x 2 = 7,248,396,288 B (7.25 GB)."""
    fw = ctx.framework
    return fw.zero3_reduce_queue_layers * np.asarray(lp, dtype=float) * fw.zero3_reduce_bytes


def deepspeed_zero3_buffers(ctx: Context, lp) -> tuple[np.ndarray, np.ndarray]:
    """DeepSpeed ZeRO-3's gathered parameters and unreduced 16-bit gradients at their peak in the
    backward [elements], for layers of ``lp`` parameters per GPU (any shape) [12, 15, 17].

    The backward runs over the weight modules from FC2 down (:func:`module_shares`; a module's
    parameters ``n_j = w_j lp``). When module j computes its weight gradient, three sets of full
    (unpartitioned) gradients are alive: the bucket reduced before (its gradients are copied into
    the partition only at the next reduction, ``partition_previous_reduced_grads``), the bucket
    being filled (it is reduced when the next gradient would overflow ``reduce_bucket_size``,
    ``bucket_params``: 5e8 elements) and module j's own. Gathered then: module j, and the modules
    prefetched behind it (the next ones in the trace up to ``stage3_prefetch_bucket_size``,
    ``zero3_prefetch_params``: 5e7 elements) only while fewer than ``stage3_max_live_parameters``
    (``zero3_max_live_params``: 1e9, or ``training.zero3_max_live_parameters``) elements are gathered
    (:func:`prefetch_takes`, the rule the timing reads). The peak of gathered plus gradient bytes
    is taken over two layers' modules from an empty bucket, and over as many layers as a bucket
    needs to fill. GPT-3 530B (h 20480, 4h FFN: QKV 3h^2, projection h^2, FC1 and FC2 4h^2 each,
    1.26e9 to 1.68e9 elements, each one bucket, FC1 and FC2 above 1e9 so nothing is prefetched
    behind them): the peak is at FC1, gradients of QKV (the layer above), FC2 and FC1 (11/12 of a
    layer) and FC1 gathered (4/12): 15/12 of a layer. With a limit of 2e9 the projection is prefetched
    behind FC1 (16/12), tied with FC2 and FC1 gathered beside the gradients of the projection and QKV
    above and FC2 at FC2 (8/12 + 8/12), which comes first and is reported."""
    fw = ctx.framework
    lp = np.asarray(lp, dtype=float)
    uniq, inv = np.unique(lp, return_inverse=True)
    terms = (module_shares(ctx), fw.bucket_params, fw.zero3_max_live_params, fw.zero3_prefetch_params,
             fw.zero3_gather_bytes, int(ctx.arch.layers))
    peaks = np.array([_deepspeed_peak(p, *terms) for p in uniq.tolist()]).reshape(-1, 2)
    return peaks[inv, 0].reshape(lp.shape), peaks[inv, 1].reshape(lp.shape)


@lru_cache(maxsize=4096)
def _deepspeed_peak(p: float, w: tuple[float, ...], bucket: float, live: float, ahead_max: float,
                    gather_bytes: float, model_layers: int) -> tuple[float, float]:
    """Gathered and unreduced-gradient elements at the backward peak of :func:`deepspeed_zero3_buffers`
    for layers of ``p`` parameters [elements]."""
    k = len(w)
    # enough layers for a bucket to fill twice (small layers share a bucket), at most the model's
    layers = int(min(max(2.0, 2.0 * bucket / max(p, 1.0) + 2.0), max(model_layers, 2)))
    order = [w[(k - 1 - j) % k] * p for j in range(k * layers + k)]  # FC2, FC1, proj, QKV, FC2, ...
    prev = cur = best = 0.0
    out = (0.0, 0.0)
    for j in range(k * layers):
        n = order[j]
        # the weights the prefetch issued at module j takes: the rule timing reads too [17, 18]
        ahead = sum(order[j + d] for d in range(1, k + 1) if prefetch_takes(order, j, d, live, ahead_max))
        g = n + ahead
        r = prev + cur + n
        total = g * gather_bytes + r * BYTES_16
        if total > best:
            best, out = total, (g, r)
        if cur + n > bucket:  # the bucket is reduced; the one reduced before is partitioned
            prev, cur = cur, n
        else:
            cur += n
    return out


def _prefetch_pass(ctx: Context, compute, comm, prefetched=None):
    """One forward pass over a layer's modules when each module's parameters are fetched one module
    ahead [s] [12]: ``sum_j max(c w_j, g w_(j+1)) + [j+1 not prefetched] min(c w_j, g w_(j+1))``
    (``c``, ``g``: the layer's compute and communication of the pass; shares ``w``:
    :func:`module_shares`). A module that was not prefetched (``prefetched``: one flag per module,
    :func:`prefetched_modules`; None: all are) is gathered after the module before it, so its
    gather adds to that module's compute instead of running beside it [17, 18]. The backward runs
    beside the reduce-scatters: :func:`_backward_pass`.

    Worked case: shares 3/12, 1/12, 4/12, 4/12, compute 12, gathers 18: all prefetched
    max(3, 1.5) + max(1, 6) + max(4, 6) + max(4, 4.5) = 19.5; FC2 not prefetched (FC1 at or above
    the live limit): FC1's term becomes 4 + 6 = 10, the pass 23.5."""
    w = module_shares(ctx)
    n = len(w)
    total = 0.0
    for j in range(n):
        c, g = compute * w[j], comm * w[(j + 1) % n]
        total = total + np.maximum(c, g)
        if prefetched is not None:
            total = total + np.where(prefetched[(j + 1) % n], 0.0, np.minimum(c, g))
    return total


def prefetch_takes(sizes, j: int, d: int, live, ahead_max):
    """Whether the prefetch DeepSpeed ZeRO-3 issues when module ``j`` of a pass starts takes the
    module ``d`` places after it (``d >= 1``) [bool, elementwise over plan arrays] [12, 17, 18].

    ``sizes``: the gathered elements of the modules in the order of the pass (repeating layer after
    layer, so indices wrap); ``live``: ``stage3_max_live_parameters``, ``ahead_max``:
    ``stage3_prefetch_bucket_size`` [elements]. ``prefetch_next_sub_modules`` prefetches only while
    ``total_available_parameter_numel`` (the elements gathered, module j's among them) is below
    ``max_available_parameters_in_numel``; ``get_params_to_prefetch`` then takes whole weights
    in trace order until it holds ``stage3_prefetch_bucket_size`` elements (at least one). So
    ``n_j < live`` and (``d = 1`` or ``n_(j+1) + ... + n_(j+d-1) < ahead_max``). The weights of a
    window already in flight are not counted in ``n_j`` (a window reaches past the next weight only
    while it holds fewer than ``ahead_max`` elements)."""
    k = len(sizes)
    between = sum(sizes[(j + i) % k] for i in range(1, d))
    return (sizes[j % k] < live) & ((d == 1) | (between < ahead_max))


def _plan_flags(flags: tuple, inverse: np.ndarray) -> tuple | None:
    """Per-combination flags of :func:`prefetched_modules` gathered back to every plan, or None
    when every module of every combination is prefetched (the passes then take their plain form)."""
    if all(bool(np.all(f)) for f in flags):
        return None
    return tuple(np.asarray(f, dtype=bool)[inverse] for f in flags)


def prefetched_modules(ctx: Context, lp, backward: bool = False) -> tuple:
    """For each weight module of a layer (:func:`module_shares` order: QKV, projection, FC1, FC2),
    whether DeepSpeed ZeRO-3 prefetches its gather behind an earlier module of the pass [bool,
    elementwise over ``lp``, a layer's parameters per GPU] [12, 17, 18]: the forward (and the
    recomputed forward) runs QKV to FC2, the backward FC2 to QKV, both on into the next layer.
    Module k is prefetched when the prefetch issued at any of the four modules before it takes it
    (:func:`prefetch_takes`, with the framework's ``zero3_max_live_params`` and
    ``zero3_prefetch_params``, the same rule as the memory of :func:`deepspeed_zero3_buffers`).

    GPT 530B (h 20480: QKV 1.26e9, projection 4.19e8, FC1 and FC2 1.68e9 elements) at the default
    live limit 1e9, forward: FC1 is prefetched (behind the projection); QKV, the projection and FC2
    are not (QKV, FC1 and FC2 hold 1e9 or more). With a limit of 2e9 every module is."""
    fw = ctx.framework
    w = module_shares(ctx)
    k = len(w)
    order = list(range(k - 1, -1, -1)) if backward else list(range(k))
    sizes = [w[i] * lp for i in order]
    flags = [False] * k
    for pos, i in enumerate(order):
        hit = False
        for d in range(1, k + 1):
            hit = hit | prefetch_takes(sizes, pos - d, d, fw.zero3_max_live_params, fw.zero3_prefetch_params)
        flags[i] = hit
    return tuple(flags)


#: The weight modules of :func:`module_shares`, in words (findings).
MODULE_NAMES = ("attention QKV", "attention output projection", "first feed-forward", "second feed-forward")


def live_limit_to_prefetch(ctx: Context, lp: float) -> float:
    """The smallest DeepSpeed ``stage3_max_live_parameters`` of one significant figure (DeepSpeed's
    own defaults are written so: 1e9, 5e8, 5e7) that lets a prefetch be issued at every weight
    module of a layer of ``lp`` parameters per GPU [elements]: above the largest module's elements,
    since the limit is compared with the elements gathered before the prefetch is added [17]
    (:func:`prefetch_takes`). GPT 530B (FC1 and FC2: 4/12 of 5,033,431,040 = 1,677,810,347
    elements): 2e9."""
    largest = max(module_shares(ctx)) * float(lp)
    exp = math.floor(math.log10(largest))
    lead = math.floor(largest / 10.0**exp) + 1  # the next leading digit up: strictly above the largest
    return float(lead) * 10.0**exp


def layer_memory(ctx: Context, mb, s_loc, tp, sp, rc, f_act):
    """Activation bytes of one layer for one micro-batch, and of the layer rebuilt during its
    backward under full recomputation [B] (Korthikanti Table 2 generalised, :mod:`.memory`).

    Returns ``(per_layer, rebuilt)`` [B] (``rebuilt`` is 0 without full recomputation); ``s_loc``:
    sequence length per GPU [tokens]; ``f_act``: the active FFN width of :func:`layer_terms`."""
    a = ctx.arch
    moe_frac = a.moe_layers / a.layers
    f_mem = (1.0 - moe_frac) * a.ffn_hidden_size + moe_frac * (f_act if a.is_moe else a.ffn_hidden_size)
    fp8_in = ctx.fp8 and ctx.fp8_saved_inputs  # Transformer Engine keeps the FP8 casts of the GEMM inputs [20]
    per_layer = activation_bytes_per_layer(a, mb, s_loc, tp, sp, rc, ctx.flash_attention, f_mem, fp8_in,
                                           ctx.distribute_saved_activations)
    rebuilt = np.where(rc == 2, activation_bytes_per_layer(a, mb, s_loc, tp, sp, 0, ctx.flash_attention, f_mem,
                                                           fp8_in), 0.0)
    return per_layer, rebuilt


def deferred_wgrad_bytes(ctx: Context, tp, pp, mb, s_loc, m, sp):
    """What the last pipeline stage holds until the flush when it defers the output layer's weight gradient
    [B] [27]: for each of the ``k = min(m, limit)`` deferred micro-batches (``limit`` 0: k = m) the output
    layer's 16-bit input (``embedding_activation_buffer``: ``input_parallel``, the 1/t sequence shard with
    sequence parallelism ``sp``, else whole) and its 16-bit output gradient over the vocabulary shard
    (``grad_output_buffer``), ``k mb s_loc (h / t_sp + V / t) x 2``. 0 without deferral or pipeline parallelism.
    Elementwise over arrays that broadcast.

    Worked case (by hand): Llama 3 70B (h 8,192, V 128,256), t = 4 with sequence parallelism, mb 1, s_loc
    8,192, k = 22: 22 x 8,192 x (2,048 + 32,064) x 2 = 12,295,602,176 B (11.45 GiB)."""
    if not ctx.defer_output_wgrad:
        return 0.0
    m = np.asarray(m, dtype=float)
    k = deferred_micro_batches(ctx, m, pp)
    h, V = float(ctx.arch.hidden_size), float(ctx.arch.vocab_size)
    return k * mb * s_loc * (h / np.where(sp, tp, 1.0) + V / tp) * BYTES_16


class MemoryCommon:
    """Per-plan terms shared by the memory of every pipeline stage [B]; :meth:`stage` gives one
    stage's memory per GPU by part."""

    def __init__(self, ctx, tp, pp, mb, s_loc, zero, n_dp, dopt, m, vp, lp, emb_p, out_last, per_layer, rebuilt,
                 lp_gemm=0.0, sp=False):
        e = ctx.eff
        self.ctx, self.pp, self.m, self.vp = ctx, pp, m, vp
        # FSDP2 beside pipeline stages (pipelined_fsdp2: TorchTitan) accumulates the whole gradients in the reduction
        # precision: it casts an unsynchronised unsharded gradient to reduce_dtype to accumulate it
        # (FSDPParam.to_accumulated_grad_if_needed, torch/distributed/fsdp/_fully_shard/_fsdp_param.py), float32 by
        # TorchTitan's default (mixed_precision_reduce); its ZeRO-3 holds ZeRO-1's states (pipeline_zero)
        once = pipelined_fsdp2(ctx, zero, pp)
        zero = pipeline_zero(ctx, zero, pp)
        self.grad_bytes = np.where(once, ctx.framework.grad_reduce_bytes, ctx.states.grad)
        # Transformer Engine's FP8 weight and transpose beside each 16-bit GEMM weight of the layers; none
        # under ZeRO-3, which holds no whole weight between micro-batches [20]
        self.fp8_copies = np.where(zero >= 3, 0.0, lp_gemm * ctx.states.fp8_weight_copies)
        # FP8 primary weights in place of the 16-bit GEMM weights (as many bytes as the copy; sharded by ZeRO-3) [20]
        self.fp8_copies = self.fp8_copies + lp_gemm * (ctx.states.gemm_weight - ctx.states.weight) / np.where(
            zero >= 3, n_dp, 1.0)
        self.zero, self.dopt, self.n_dp = zero, dopt, n_dp
        self.lp, self.emb_p, self.out_last = lp, emb_p, out_last
        self.per_layer, self.rebuilt = per_layer, rebuilt
        self.logits = 4.0 * mb * s_loc * ctx.arch.vocab_size / tp  # fp32 logits of one micro-batch
        self.logits = self.logits + deferred_wgrad_bytes(ctx, tp, pp, mb, s_loc, m, sp)  # held to the flush [27]
        # ZeRO-3 keeps the gathered parameters of the current and the prefetched unit [4]: two layers
        # (FSDP wraps each layer), or for DeepSpeed the module computing and those prefetched [12], in the gather
        # precision (``zero3_gather_bytes``: 4 for FSDP's fp32 gathers, param_dtype None [16]); DeepSpeed
        # also holds full 16-bit gradients until their bucket is reduced and partitioned [17]
        if ctx.framework.zero3_prefetch == "module":
            g_el, r_el = deepspeed_zero3_buffers(ctx, lp)
            r_bytes = r_el * BYTES_16
        else:
            # Megatron-FSDP also holds the unsharded gradients of the units in its reduce-scatter queue
            # (``zero3_reduce_queue_layers``, in the reduction precision): :func:`reduce_queue_bytes`
            g_el, r_bytes = gather_buffer_layers(ctx) * lp, reduce_queue_bytes(ctx, lp)
        zgb = ctx.framework.zero3_gather_bytes
        if zero3_fp8(ctx):  # the layers' GEMM weights gathered in one byte, as timing moves them [24]
            gemm_share = np.asarray(lp_gemm, dtype=float) / np.maximum(np.asarray(lp, dtype=float), 1.0)
            g_bytes = g_el * (zgb - (zgb - 1.0) * gemm_share)
        else:
            g_bytes = g_el * zgb
        self.gather = np.where(zero == 3, g_bytes, 0.0)
        self.unreduced = np.where(zero == 3, r_bytes, 0.0)
        self.fixed = (e.cuda_context_gib + e.comm_buffers_gib) * GIB
        self.frag = e.fragmentation

    def stage(self, layers, index, has_embedding, has_output):
        """Memory of pipeline stage ``index`` holding ``layers`` layers [B], by part."""
        held = self.held(layers, index, has_embedding, has_output)
        other, total = self.on_top(held["model"] + held["activations"])
        return {"weights": held["weights"], "gradients": held["gradients"],
                "optimizer_states": held["optimizer_states"], "gather_buffers": held["gather_buffers"],
                "unreduced_gradients": held["unreduced_gradients"],
                "activations": held["activations"], "other": other, "total": total}

    def held(self, layers, index, has_embedding, has_output):
        """Model states (with ZeRO-3's gather buffers: ``model``) and activations of pipeline stage
        ``index`` holding ``layers`` layers [B], by part."""
        pp, m, vp = self.pp, self.m, self.vp
        params = layers * self.lp + np.where(has_embedding, self.emb_p, 0.0) + np.where(has_output, self.out_last, 0.0)
        states = model_state_bytes(params, self.n_dp, self.zero, self.dopt, self.ctx.states)
        states["gradients"] = params * self.grad_bytes / np.where(self.zero >= 2, self.n_dp, 1)
        states["weights"] = states["weights"] + layers * self.fp8_copies
        in_flight = in_flight_factor(pp, m, vp, index)  # Megatron-Core's warm-up forwards on this stage [19]
        acts = self.per_layer * layers * in_flight + self.rebuilt + np.where(has_output, self.logits, 0.0)
        model = states["weights"] + states["gradients"] + states["optimizer_states"] + self.gather + self.unreduced
        return {"weights": states["weights"], "gradients": states["gradients"],
                "optimizer_states": states["optimizer_states"], "gather_buffers": self.gather + 0.0 * params,
                "unreduced_gradients": self.unreduced + 0.0 * params, "activations": acts, "model": model}

    def on_top(self, held):
        """CUDA context, communication buffers and fragmentation on top of ``held`` bytes of model
        states and activations, and the total [B]; non-decreasing in ``held`` (fragmentation >= 0)."""
        other = self.fixed + self.frag * held
        return other, held + other


def stage_table(ctx: Context, plan: dict[str, np.ndarray], layers: list[int]) -> dict[str, np.ndarray]:
    """Time per micro-batch [s] and memory [B] of every pipeline stage of one plan.

    ``plan``: length-1 arrays (as :func:`evaluate` takes); ``layers``: layers per stage.
    """
    plan = complete_plans(ctx, plan)
    res = _evaluate(ctx, plan)
    st = {k: float(v[0]) for k, v in res["stage_terms"].items()}
    p = len(layers)
    n = np.asarray(layers, dtype=float)
    idx = np.arange(p, dtype=float)
    first, last = idx == 0, idx == p - 1
    t = st["phi"] * (n * st["t_layer"] + np.where(first, st["t_emb"], 0.0) + np.where(last, st["t_out"], 0.0)
                     + (st["t_p2p"] if p > 1 else 0.0))
    rep = {k: np.repeat(np.asarray(v, dtype=float), p) for k, v in plan.items()}
    tp, pp, ep = rep["tp"], rep["pp"], rep["ep"]
    cp, mb = rep["cp"], rep["mb"]
    s_loc = ctx.arch.seq_length / cp
    m = rep["gbs"] / (rep["dp"] * mb)
    rc, sp = rep["rc"].astype(int), rep["sp"].astype(bool)
    _, _, _, _, _, f_act = layer_terms(ctx, tp[:1], cp[:1], ep[:1], mb[:1], rc[:1], sp[:1], rep["tpo"][:1])
    lp = layer_params(ctx, tp, ep)
    emb_p, out_p = embedding_params(ctx, tp)
    out_last = np.where(p == 1, final_norm_params(ctx, tp) if ctx.arch.tied_embeddings else out_p, out_p)
    per_layer, rebuilt = layer_memory(ctx, mb, s_loc, tp, sp, rc, f_act)
    common = MemoryCommon(ctx, tp, pp, mb, s_loc, rep["zero"].astype(int), rep["dp"] * cp, rep["dopt"].astype(bool),
                           m, rep["vp"], lp, emb_p, out_last, per_layer, rebuilt, layer_gemm_params(ctx, tp, ep),
                           rep["sp"].astype(bool))
    mem = common.stage(n, idx, first, last)
    return {"layers": n.astype(int), "time_s": t, "memory": mem}
