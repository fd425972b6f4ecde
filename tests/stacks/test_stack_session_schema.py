"""The run-as Session document carries every input the Session document schema marks required.

Source: Session Manager user guide, "Session document schema",
https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-schema.html
(read 2026-11-27): s3EncryptionEnabled, cloudWatchEncryptionEnabled, cloudWatchStreamingEnabled
and runAsEnabled are "Type: Boolean, Required: Yes"; idleSessionTimeout is a String of minutes,
1-60; shellProfile is a map of ``windows`` and ``linux`` strings.
"""

from __future__ import annotations

# input -> the type the schema gives it
REQUIRED_INPUTS = {
    "s3EncryptionEnabled": bool,
    "cloudWatchEncryptionEnabled": bool,
    "cloudWatchStreamingEnabled": bool,
    "runAsEnabled": bool,
}
OPTIONAL_STRINGS = (
    "s3BucketName", "s3KeyPrefix", "cloudWatchLogGroupName", "kmsKeyId", "runAsDefaultUser",
    "idleSessionTimeout", "maxSessionDuration",
)  # fmt: skip


def test_the_run_as_document_has_every_required_input(synthesized) -> None:
    synth = synthesized("default")
    ((_, document),) = synth.resources("cluster", "AWS::SSM::Document").items()
    content = document["Properties"]["Content"]
    assert content["schemaVersion"] == "1.0"
    assert content["sessionType"] == "Standard_Stream"
    inputs = content["inputs"]
    for name, kind in REQUIRED_INPUTS.items():
        assert isinstance(inputs.get(name), kind), (name, inputs.get(name))
    for name in OPTIONAL_STRINGS:
        assert name not in inputs or isinstance(inputs[name], str), name
    assert 1 <= int(inputs["idleSessionTimeout"]) <= 60
    assert set(inputs["shellProfile"]) == {"windows", "linux"}
    # nothing is sent anywhere, and a destination added later must be encrypted
    assert inputs["s3BucketName"] == inputs["cloudWatchLogGroupName"] == ""
    assert inputs["s3EncryptionEnabled"] and inputs["cloudWatchEncryptionEnabled"]
    # the user comes from the caller's SSMSessionRunAs tag only
    assert inputs["runAsEnabled"] is True and inputs["runAsDefaultUser"] == ""
