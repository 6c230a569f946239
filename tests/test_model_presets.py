"""Parameter counts computed from the architecture against the published counts."""

from __future__ import annotations

import pytest

from gpucluster_lib import ScenarioError, UnknownIdError, loads
from gpucluster_lib.workloads.transformer import resolve_transformer


@pytest.mark.parametrize(
    ("preset", "published"),
    [
        ("gpt3-175b", 174.6e9),          # Narayanan et al. 2021 Table 2: 174.6B (V = 51,200)
        ("llama2-7b", 6_738_415_616),    # meta-llama/Llama-2-7b-hf safetensors index: 6,738,415,616
        ("llama2-13b", 13_015_864_320),  # meta-llama/Llama-2-13b-hf: 13,015,864,320
        ("llama2-70b", 68_976_648_192),  # meta-llama/Llama-2-70b-hf: 68,976,648,192
        ("llama3-8b", 8_030_261_248),    # meta-llama/Meta-Llama-3-8B: 8,030,261,248
        ("llama3-70b", 70_553_706_496),  # meta-llama/Meta-Llama-3-70B: 70,553,706,496
        ("llama3-405b", 405_853_388_800),  # meta-llama/Llama-3.1-405B: 405,853,388,800
        ("mixtral-8x7b", 46_702_792_704),  # mistralai/Mixtral-8x7B-v0.1: 46,702,792,704
        # llm-foundry scripts/train/benchmarking/README.md (b2a43a1), NumParams at SeqLen 2048 (the norms' weights,
        # 0.03-0.07%, are not in the preset count)
        ("mpt-125m", 125_311_488),
        ("mpt-350m", 355_985_408),
        ("mpt-760m", 760_470_528),
        ("mpt-1b", 1_315_950_592),
    ],
)
def test_total_params_match_published(preset, published):
    assert resolve_transformer(preset).total_params() == pytest.approx(published, rel=1e-3)


def test_gpt3_matches_narayanan_closed_form():
    # Narayanan 2021 Sec. 5.1: P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)), l=96, h=12288, V=51200, s=2048
    n_layers, h, V, s = 96, 12288, 51200, 2048
    closed = 12 * n_layers * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * n_layers * h))
    # the closed form omits the final LayerNorm (2h = 24,576 parameters)
    assert resolve_transformer("gpt3-175b").total_params() == pytest.approx(closed + 2 * h, abs=1)


def test_mixtral_active_params():
    # Jiang et al. 2024 Sec. 2: 13B active parameters per token (12.88B by config arithmetic:
    # 32 x (attention 41.9M + 2 experts x 176.2M + norms) + 2 x 131M embeddings)
    assert resolve_transformer("mixtral-8x7b").active_params() == pytest.approx(12.88e9, rel=2e-3)


def test_kv_cache_bytes_llama2_70b():
    # 80 layers x 2 (K,V) x 8 KV heads x 128 head dim x 2 bytes (bf16) = 327,680 bytes per token
    assert resolve_transformer("llama2-70b").kv_cache_bytes_per_token(2) == 327_680


def test_override_preset_fields():
    s = loads("model: {preset: llama2-7b, seq_length: 8192}")
    arch = resolve_transformer(s.model)
    assert arch.seq_length == 8192 and arch.layers == 32


@pytest.mark.parametrize(
    ("text", "exc", "match"),
    [
        ("model: {preset: llama-70b}", UnknownIdError, r"model\.preset: unknown model preset 'llama-70b'"),
        ("model: {layers: 2, hidden_size: 64}", ScenarioError, r"model\.attention_heads: required for a custom transformer"),
        ("model: {layers: 2, hidden_size: 100, attention_heads: 3, ffn_hidden_size: 256, vocab_size: 10, seq_length: 8}",
         ScenarioError, r"hidden_size 100 is not divisible by attention_heads 3"),
        ("model: {preset: llama2-70b, kv_heads: 3}", ScenarioError, r"model\.kv_heads: attention_heads 64 must be a multiple of kv_heads 3"),
        ("model: {preset: mixtral-8x7b, experts_per_token: 9}", ScenarioError, r"top-k 9 exceeds num_experts 8"),
    ],
)
def test_bad_models(text, exc, match):
    with pytest.raises(exc, match=match):
        resolve_transformer(loads(text).model)
