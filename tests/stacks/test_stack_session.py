"""The Session Manager document that lets people reach the login node as themselves (run-as)."""

from __future__ import annotations


def _documents(synth) -> dict:
    return synth.resources("cluster", "AWS::SSM::Document")


def test_a_slurm_login_group_gets_a_run_as_session_document(synthesized) -> None:
    synth = synthesized("default")
    ((logical_id, document),) = _documents(synth).items()
    props = document["Properties"]
    assert props["DocumentType"] == "Session"
    inputs = props["Content"]["inputs"]
    # the user of the caller's SSMSessionRunAs tag, and nobody else: no default user, never root
    assert inputs["runAsEnabled"] is True
    assert inputs["runAsDefaultUser"] == ""
    outputs = synth.outputs("cluster")
    assert outputs["RunAsDocumentName"]["Value"] == {"Ref": logical_id}
    command = outputs["LoginSsmCommand"]["Value"]["Fn::Join"][1]
    assert {"Ref": logical_id} in command
    assert any(isinstance(part, str) and "_login-<instance-id>" in part for part in command)


def test_no_document_without_a_login_group_or_on_eks(synthesized, build_variant) -> None:
    assert _documents(synthesized("eks-minimal")) == {}
    groups = synthesized("default").config.cluster.instance_groups
    without_login = [g.model_dump(exclude_unset=True) for g in groups if g.node_type != "Login"]
    synth = build_variant({"cluster.instance_groups": without_login}, base="default")
    assert _documents(synth) == {}
    assert "LoginSsmCommand" not in synth.outputs("cluster")
