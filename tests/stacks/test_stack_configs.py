"""Which shipped configs the stack tests synthesize."""

from __future__ import annotations

from stack_testkit import CONFIG_DIR, PIPELINE_CONFIGS, SHIPPED_CONFIGS


def test_default_and_examples_are_synthesized() -> None:
    assert CONFIG_DIR / "default.yaml" in SHIPPED_CONFIGS
    assert len(SHIPPED_CONFIGS) >= 2


def test_pipeline_files_are_synthesized_as_pipelines() -> None:
    # by test_stack_pipeline.py; every other stack test takes SHIPPED_CONFIGS as environments
    assert CONFIG_DIR / "examples" / "pipeline.yaml" in PIPELINE_CONFIGS
    assert not set(PIPELINE_CONFIGS) & set(SHIPPED_CONFIGS)
