"""HyperPod reads a group's rollback alarms during a rolling update: the role may, exactly then."""

from __future__ import annotations


def _alarm_statements(synth) -> list[dict]:
    return [
        s
        for p in synth.resources("nodes", "AWS::IAM::ManagedPolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "cloudwatch:DescribeAlarms" in str(s["Action"])
    ]


def test_named_rollback_alarms_can_be_read_and_nothing_else(synthesized) -> None:
    synth = synthesized("full")
    names = sorted(
        {
            n
            for g in synth.config.cluster.instance_groups
            for u in (g.scheduled_update, g.auto_patch)
            if u is not None and u.rollback_alarms != "auto"
            for n in u.rollback_alarms
        }
        # `rollback_alarms: auto`: the group's own alarm
        | {
            f"{synth.config.cluster_name}-{g.name}-rollback"
            for g in synth.config.cluster.instance_groups
            for u in (g.scheduled_update, g.auto_patch)
            if u is not None and u.rollback_alarms == "auto"
        }
    )
    assert len(names) == 2  # the full example names one and asks for one auto alarm
    (statement,) = _alarm_statements(synth)
    assert statement["Action"] == "cloudwatch:DescribeAlarms"
    resources = (
        statement["Resource"]
        if isinstance(statement["Resource"], list)
        else [statement["Resource"]]
    )
    resolved = [str(synth.resolve(r)) for r in resources]
    assert len(resolved) == len(names)
    for name, arn in zip(names, resolved, strict=True):
        assert arn.endswith(f":alarm:{name}"), arn


def test_no_alarm_read_without_rollback_alarms(synthesized) -> None:
    assert _alarm_statements(synthesized("default")) == []
