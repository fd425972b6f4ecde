"""First-deploy critical path of every shipped config (issue 7, SPEC section 5).

The estimate (stack barriers, ``cdk deploy --all --concurrency 4``) must be within 5% of the
ideal (the same resources with only resource-level dependencies), and no FSx data repository
association may lie on the HyperPod cluster's path. The estimator reads the assembly the
``shipped`` fixture already synthesized: no extra synth.
"""

from __future__ import annotations

from typing import Any

import pytest
from bench_testkit import cp

TARGET = 0.05  # estimate within 5% of the ideal
CONCURRENCY = 4  # the Makefile's `cdk deploy --all --concurrency 4`

_analysed: dict[str, tuple[cp.Assembly, cp.Report]] = {}


def analysed(shipped: Any) -> tuple[cp.Assembly, cp.Report]:
    """The assembly of a synthesized config and the estimator's report (once per worker)."""
    key = str(shipped.outdir)
    if key not in _analysed:
        assembly = cp.load_assembly(shipped.outdir)
        _analysed[key] = (assembly, cp.analyse(assembly, concurrency=CONCURRENCY))
    return _analysed[key]


def report_of(shipped: Any) -> cp.Report:
    return analysed(shipped)[1]


def test_every_cross_stack_reference_is_followed(shipped: Any) -> None:
    assert report_of(shipped).unresolved == ()


def test_the_assembly_has_one_hyperpod_cluster(shipped: Any) -> None:
    assembly, _ = analysed(shipped)
    assert [r.type for r in assembly.resources()].count(cp.HYPERPOD_TYPE) == 1


def test_no_data_repository_association_is_on_the_hyperpod_cluster_path(shipped: Any) -> None:
    dras = report_of(shipped).dras_before_cluster
    assert dras == (), (
        f"{shipped.config.name}: the HyperPod cluster waits for {['/'.join(n) for n in dras]}; "
        "DRAs belong in a stack nothing waits for (SPEC section 5)"
    )


def test_first_deploy_estimate_is_within_5_percent_of_the_ideal(shipped: Any) -> None:
    report = report_of(shipped)
    if report.over_ideal <= TARGET:
        return
    pytest.fail(
        f"{shipped.config.name}: estimated first deploy {report.estimate.minutes:.1f} min is "
        f"{report.over_ideal:+.1%} over the ideal {report.ideal.minutes:.1f} min "
        f"(target {TARGET:.0%}).\n"
        f"critical path (estimate):\n{cp.format_path(report.estimate.path)}\n"
        f"critical path (ideal):\n{cp.format_path(report.ideal.path)}",
        pytrace=False,
    )
