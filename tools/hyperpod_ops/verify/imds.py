"""The ``imds`` check of ``make verify`` (Slurm): a user's processes and jobs cannot reach the
instance metadata service, root and the system accounts still can (issue 34, M4).

The lifecycle step ``imds`` (lifecycle_assets/steps/imds.sh) refuses IMDS to UIDs 2000 and up
with an iptables owner match; this check asks IMDS for an IMDSv2 token on the controller as root,
as a system account (UID 1), as a UID of the users' range and, when the users file has a user,
in a Slurm job of that user, and compares the HTTP status each got. Nothing secret is printed:
only the status of the token request.
"""

from __future__ import annotations

from hyperpod_cdk.config.node_setup import MIN_UID
from hyperpod_ops.verify.model import (
    BUDGET_SECONDS,
    Check,
    Result,
    VerifyRun,
    failed,
    passed,
    skipped,
)

CHECK = "imds"
FIX = (
    "run the lifecycle scripts' imds step again on the nodes (systemctl restart hyperpod-imds on "
    "each node), or see docs/security.md (IMDS on Slurm nodes)"
)


def _status(text: str) -> str:
    """The HTTP status curl printed ('000': no connection), or what it said instead."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(nothing)"


def check_imds(run: VerifyRun) -> list[Result]:
    """IMDS answers root and a system account, and no user's UID or job."""
    from hyperpod_ops.verify import slurm

    if not run.config.cluster.node_setup.restrict_imds:
        return [skipped(CHECK, "cluster.node_setup.restrict_imds is off: every user may use IMDS")]
    groups = slurm.compute_groups(run)
    partition = (groups[0].effective_partition or groups[0].name) if groups else ""
    envelope, result = slurm._on_controller(
        run,
        "imds",
        min(BUDGET_SECONDS[CHECK], 300),
        uid=MIN_UID,
        partition=partition,
        job=f"{run.run_id}-{CHECK}",
    )
    if envelope is None:
        return [slurm._no_answer(CHECK, "the IMDS probes on the controller", result)]
    found: list[Result] = []
    for section, who in (("root", "root"), ("system", "a system account (UID 1)")):
        status = _status(envelope.text(section))
        if status == "200":
            found.append(passed(CHECK, f"IMDS answers {who} (HTTP 200)", section))
        else:
            found.append(
                failed(
                    CHECK,
                    f"IMDS does not answer {who} (status {status}): the node's agents lose the role",
                    "check the HYPERPOD-IMDS chain (iptables -S HYPERPOD-IMDS) on the controller; "
                    "set cluster.node_setup.restrict_imds: false to lift it",
                    section,
                )
            )
    probes = [("user", f"UID {MIN_UID}")]
    if "job" in envelope.sections:
        probes.append(("job", "a Slurm job of a users-file user"))
    else:
        found.append(
            skipped(CHECK, "no users-file user or compute partition to run a job as", "job")
        )
    for section, who in probes:
        status = _status(envelope.text(section))
        if status == "200":
            found.append(failed(CHECK, f"{who} got an IMDS token: users can take the node role's credentials", FIX, section))  # fmt: skip
        else:
            found.append(passed(CHECK, f"{who} is refused by IMDS (status {status})", section))
    return found


CHECKS: dict[str, Check] = {CHECK: check_imds}
