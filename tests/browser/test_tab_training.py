"""The Training tab in a real browser: a plan change updates the estimate; a bad plan shows a message."""

from __future__ import annotations

import pytest

from .conftest import open_example, open_tab

pytestmark = pytest.mark.browser


def test_training_tab_updates_and_reports_bad_plan(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    open_example(page)  # GPT-3 175B on 128 DGX A100
    open_tab(page, "Training")
    summary = page.locator(".gc-kv", has_text="Step time").first
    expect(summary).to_be_visible(timeout=120_000)
    expect(summary).to_contain_text("MFU")
    # beside the results, how far the estimate has been from the held-out published runs on A100 80GB (a note)
    expect(page.locator("li:visible", has_text="published training runs on this GPU").first).to_contain_text(
        "that were not used to set these values, the estimated step time")
    # full recomputation on PyTorch 2.1's checkpoint: the rerun of each layer stops before its last projection
    page.locator(".widget-dropdown", has_text="Checkpoint stop").locator("select").select_option(index=1)  # "On: ..."
    expect(summary).to_contain_text("stops before the feed-forward output projection")
    before = summary.inner_text()
    chart = page.locator(".vega-embed", has_text="Step time").first
    expect(chart).to_be_visible()
    chart_before = chart.inner_text()
    # selective recomputation: the plan label and the step time change
    page.locator(".widget-dropdown", has_text="Recompute").locator("select").select_option("selective")
    expect(summary).to_contain_text("selective")
    expect(summary).not_to_have_text(before)
    expect(chart).not_to_have_text(chart_before)  # the stacked bar follows the new step time
    expect(page.locator(".vega-embed", has_text="Memory per GPU").first).to_be_visible()
    page.screenshot(path=str(artifacts / "app-training.png"), full_page=True)
    # a tensor-parallel size that does not divide the heads: a message naming the field, no traceback
    tp = page.locator(".widget-text", has_text="Tensor (TP)").locator("input")
    tp.fill("5")
    tp.press("Enter")
    expect(page.locator(".gc-error").first).to_contain_text("parallelism.tensor: 5 does not divide the model's 96 attention heads")
    assert "Traceback" not in page.locator("body").inner_text()
    page.screenshot(path=str(artifacts / "app-training-bad-plan.png"), full_page=True)
    # FP8: the recipe and weights dropdowns are greyed out in bf16, and read once the precision is fp8
    tp.fill("8")
    tp.press("Enter")
    expect(summary).to_contain_text("TP8")
    recipe = page.locator(".widget-dropdown", has_text="FP8 recipe").locator("select")
    expect(recipe).to_be_disabled()
    expect(page.locator(".widget-dropdown", has_text="FP8 weights").locator("select")).to_be_disabled()
    # the Training tab's own Accelerator and Precision: the Hardware tab, built and hidden, has a Precision too
    page.locator(".widget-dropdown:visible", has_text="Accelerator").locator("select").select_option("h100-sxm5-80gb")
    page.locator(".widget-dropdown:visible", has_text="Precision").locator("select").select_option("fp8")
    expect(recipe).to_be_enabled()
    expect(summary).to_contain_text("FP8 delayed scaling")  # Megatron-LM's default recipe
    recipe.select_option(label="Current scaling (an amax pass before each cast)")
    expect(summary).to_contain_text("FP8 current scaling")
    # the schedule and loss dropdowns: each change re-estimates; a setting the framework has no path for is named
    # in a warning beside the results, not dropped silently (the panel test checks the values themselves)
    before = summary.inner_text()
    page.locator(".widget-dropdown", has_text="PP transfers").locator("select").select_option(
        label="On: steady-state sends and receives behind the other direction's chunk")
    expect(summary).not_to_have_text(before)  # TP8 PP8 with 2 virtual stages: the steady state's transfers hidden
    before = summary.inner_text()
    page.locator(".widget-dropdown", has_text="Cross-entropy").locator("select").select_option(
        label="Megatron-Core fused cross-entropy (cross_entropy_loss_fusion, torch.compile'd): 40 bytes a logit")
    expect(summary).not_to_have_text(before)  # 40 bytes a logit instead of Megatron-LM's unfused 52
    page.locator(".widget-dropdown", has_text="Output wgrad").locator("select").select_option(
        label="On, the first 22 micro-batches (NeMo's 70B recipes)")
    page.get_by_label("Framework", exact=True).select_option(label="DeepSpeed (pipeline engine, ZeRO)")
    findings = page.locator(".widget-html", has_text="is set, but DeepSpeed").first
    expect(findings).to_contain_text("the pipeline transfer overlap is set, but DeepSpeed")
    expect(findings).to_contain_text("weight gradient is set to be deferred, but DeepSpeed")
    assert "Traceback" not in page.locator("body").inner_text()
