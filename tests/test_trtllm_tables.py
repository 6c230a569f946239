"""TensorRT-LLM's own throughput tables (gpucluster_lib/data/validation/trtllm_llama2_70b_fp8.yaml)
and the figures docs/inference.md and docs/validation.md ("Candidate mechanisms measured") quote from
them: recomputed here, each within the rounding it is quoted at, so a change of the serving model or
of the rows that moves a quoted figure fails until the docs say the new one.
"""

from __future__ import annotations

import pytest

from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.inference.validation import (
    trtllm_model_per_gpu,
    trtllm_ratio,
    trtllm_releases,
    trtllm_row,
    trtllm_rows,
)
from tests.scripts import load_script

LENGTHS = ((128, 128), (2048, 128), (128, 2048), (2048, 2048))
STATIC = ((128, 128), (2048, 128), (2048, 2048))


def quoted(value: float, figure: float, places: int) -> bool:
    """``value`` reads as ``figure`` when rounded to ``places`` decimals."""
    return abs(value - figure) <= 0.5 * 10 ** -places + 1e-9


def gain(old: str, new: str, *key) -> float:
    return trtllm_ratio(trtllm_row(new, *key)) / trtllm_ratio(trtllm_row(old, *key)) - 1


def published_gain(old: str, new: str, *key) -> float:
    return trtllm_row(new, *key).per_gpu / trtllm_row(old, *key).per_gpu - 1


def test_the_rows_are_the_published_ones():
    rels = trtllm_releases()
    assert list(rels) == ["0.8.0", "0.9.0", "0.10.0", "0.11.0"]
    assert {r: len(v["rows"]) for r, v in rels.items()} == {"0.8.0": 3, "0.9.0": 6, "0.10.0": 12, "0.11.0": 8}
    # 0.8.0 performance.md, H100 GPUs (FP8): LLaMA 70B, batch 64, TP 2, 2048/2048: 1,020 out tok/s/GPU
    assert trtllm_row("0.8.0", "dgx-h100", 2, 2048, 2048).tokens_per_s == 1020
    # 0.9.0 performance.md, H100 GPUs (FP8): LLaMA 70B, batch 1024, TP 2, 128/128: 3,214 out tok/s/GPU
    r = trtllm_row("0.9.0", "dgx-h100", 2, 128, 128)
    assert (r.batch, r.tokens_per_s, r.per_gpu) == (1024, 3214, 3214)
    # 0.9.0, H200 GPUs (FP8): LLaMA 70B, batch 64, TP 1, 2048/2048: 1,458
    assert trtllm_row("0.9.0", "dgx-h200", 1, 2048, 2048).tokens_per_s == 1458
    # 0.10.0 perf-overview.md, LLaMA v2 70B 128/128 TP 1, H200 141GB HBM3 FP8: 4,055.97 tokens/s (of the TP group)
    assert trtllm_row("0.10.0", "dgx-h200", 1, 128, 128).per_gpu == 4055.97
    # 0.10.0, 128/2048 TP 2, H100 80GB HBM3 FP8: 4,710.45 tokens/s of the two GPUs
    assert trtllm_row("0.10.0", "dgx-h100", 2, 128, 2048).per_gpu == pytest.approx(4710.45 / 2)
    # 0.11.0 perf-overview.md, LLaMA v2 70B 2048/2048 TP 2: H200 3,554.71, H100 2,457.73
    assert trtllm_row("0.11.0", "dgx-h200", 2, 2048, 2048).tokens_per_s == 3554.71
    assert trtllm_row("0.11.0", "dgx-h100", 2, 2048, 2048).tokens_per_s == 2457.73
    # the in-flight tables' engines: 0.10.0 max_utilization, 0.11.0 guaranteed_no_evict, both 2048 / 2048
    assert [(rels[v]["kv_cache_scheduling"], rels[v]["max_batch_size"], rels[v]["max_num_tokens"])
            for v in ("0.10.0", "0.11.0")] == [("max_utilization", 2048, 2048), ("no_evict", 2048, 2048)]


def test_a_missing_release_or_row_is_a_clear_error():
    with pytest.raises(GpuClusterError, match=r"no TensorRT-LLM release '0\.12\.0'.*0\.8\.0, 0\.9\.0"):
        trtllm_rows("0.12.0")
    with pytest.raises(GpuClusterError, match="0.11.0 has no row for dgx-h200 at TP 1"):
        trtllm_row("0.11.0", "dgx-h200", 1, 128, 128)


def test_a_static_row_without_its_batch_is_refused(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("releases:\n  '1.0':\n    method: static\n    file: x.md\n    rows:\n"
                   "      - {system: dgx-h100, tp: 2, input_tokens: 128, output_tokens: 128, tokens_per_s: 1}\n")
    with pytest.raises(GpuClusterError, match="every static row states its batch"):
        trtllm_releases(bad)


def test_release_gain_through_the_model_as_quoted():
    # docs/inference.md and docs/validation.md: DGX H100 TP 2, 0.9.0 (static) -> 0.11.0 (in-flight),
    # published / model 1.164 / 1.164 (128/128), 1.081 / 1.148 (2048/128), 0.765 / 0.738 (2048/2048),
    # a gain through the model of +0.1%, +6.2% and -3.6%
    ratios = {(i, o): (trtllm_ratio(trtllm_row("0.9.0", "dgx-h100", 2, i, o)),
                       trtllm_ratio(trtllm_row("0.11.0", "dgx-h100", 2, i, o))) for i, o in STATIC}
    for (i, o), want in zip(STATIC, ((1.164, 1.164), (1.081, 1.148), (0.765, 0.738)), strict=True):
        assert all(quoted(v, w, 3) for v, w in zip(ratios[(i, o)], want, strict=True)), ((i, o), ratios[(i, o)])
    gains = [b / a - 1 for a, b in ratios.values()]
    assert [quoted(100 * g, w, 1) for g, w in zip(gains, (0.1, 6.2, -3.6), strict=True)] == [True] * 3, gains


def test_tp1_over_tp2_per_gpu_as_quoted():
    # docs/inference.md and docs/validation.md: 0.10.0, H200, per GPU TP 1 / TP 2 = 4,056 / 3,150 = 1.29
    # (128/128) and 494 / 392 = 1.26 (2048/128) published, 1.11 and 1.10 from the model
    for (i, o), pub, each, mod in (((128, 128), 1.29, (4056, 3150), 1.11), ((2048, 128), 1.26, (494, 392), 1.10)):
        tp1, tp2 = trtllm_row("0.10.0", "dgx-h200", 1, i, o), trtllm_row("0.10.0", "dgx-h200", 2, i, o)
        assert (round(tp1.per_gpu), round(tp2.per_gpu)) == each
        assert quoted(tp1.per_gpu / tp2.per_gpu, pub, 2)
        assert quoted(trtllm_model_per_gpu(tp1) / trtllm_model_per_gpu(tp2), mod, 2), (i, o)


def test_the_other_figures_of_the_tables_as_quoted():
    # docs/validation.md: 0.8.0 -> 0.9.0 -1.7% / -0.3% / -0.9% (H100, TP 2, same batches)
    assert [quoted(100 * published_gain("0.8.0", "0.9.0", "dgx-h100", 2, i, o), w, 1)
            for (i, o), w in zip(STATIC, (-1.7, -0.3, -0.9), strict=True)] == [True] * 3
    # 0.10.0 -> 0.11.0 at TP 2: +7.7 / -1.4 / +11.8 / +8.4% (H100), +5.6 / -2.3 / +4.0 / +2.9% (H200)
    for system, want in (("dgx-h100", (7.7, -1.4, 11.8, 8.4)), ("dgx-h200", (5.6, -2.3, 4.0, 2.9))):
        got = [100 * published_gain("0.10.0", "0.11.0", system, 2, i, o) for i, o in LENGTHS]
        assert all(quoted(g, w, 1) for g, w in zip(got, want, strict=True)), (system, got)
    # 0.9.0, H200 at TP 1 over H100 at TP 2 per GPU: 1.24 (128/128) and 1.21 (2048/128), the model's 1.13 and 1.13
    for (i, o), pub, mod in (((128, 128), 1.24, 1.13), ((2048, 128), 1.21, 1.13)):
        a, b = trtllm_row("0.9.0", "dgx-h200", 1, i, o), trtllm_row("0.9.0", "dgx-h100", 2, i, o)
        assert quoted(a.per_gpu / b.per_gpu, pub, 2)
        assert quoted(trtllm_model_per_gpu(a) / trtllm_model_per_gpu(b), mod, 2), (i, o)
    # the model's error on 0.10.0: -26% to +41% at TP 1 on the H200, -14% to +56% at TP 2 on the H100
    for (system, tp), lo, hi in ((("dgx-h200", 1), -26, 41), (("dgx-h100", 2), -14, 56)):
        errs = [100 * (1 / trtllm_ratio(trtllm_row("0.10.0", system, tp, i, o)) - 1) for i, o in LENGTHS]
        assert quoted(min(errs), lo, 0) and quoted(max(errs), hi, 0), (system, errs)


def test_wave_and_tile_fill_as_quoted():
    """scripts/trtllm_tables.py's whole-tile, whole-wave fill of a Llama 2 70B layer's four GEMMs."""
    mod = load_script("trtllm_tables")
    # by hand, 4,096 tokens, 128 x 128 tiles, TP 1: N = 10,240 / 8,192 / 57,344 / 8,192 at K = 8,192 x 3 and
    # 28,672 give 32 x (80, 64, 448, 64) tiles, issued in whole waves of 132 as 2,640 / 2,112 / 14,388 / 2,112:
    # (2,560 + 2,048 + 14,336 + 2,048 x 3.5) / (2,640 + 2,112 + 14,388 + 2,112 x 3.5) = 26,112 / 26,532
    assert mod.gemm_fill(4096, 1, (128, 128)) == pytest.approx(26_112 / 26_532, rel=1e-12)
    # docs/validation.md: 98.4% / 97.9% (128 x 128) and 97.9% / 97.0% (128 x 256) at TP 1 / TP 2 for 4,096
    # tokens, 89.9% / 88.9% and 84.4% / 82.6% at 1,573 tokens
    for tokens, tile, want in ((4096, (128, 128), (98.4, 97.9)), (4096, (128, 256), (97.9, 97.0)),
                               (1573, (128, 128), (89.9, 88.9)), (1573, (128, 256), (84.4, 82.6))):
        got = (100 * mod.gemm_fill(tokens, 1, tile), 100 * mod.gemm_fill(tokens, 2, tile))
        assert all(quoted(g, w, 1) for g, w in zip(got, want, strict=True)), (tokens, tile, got)
