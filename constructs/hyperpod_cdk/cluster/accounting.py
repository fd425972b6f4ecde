"""The Slurm accounting database: RDS for MySQL with credentials in Secrets Manager."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from hyperpod_cdk import facts
from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.nag import acknowledge
from hyperpod_cdk.compliance.packs import acknowledge_controls

DEFAULT_INSTANCE_CLASS = "db.t4g.medium"
MYSQL_PORT = 3306
# MySQL 8.4 (facts/__init__.py says why and which release). HyperPod takes any MySQL-compatible
# database slurmdbd supports (SageMaker API reference, ClusterAccountingDatabase: "an Amazon RDS
# for MySQL or Aurora MySQL database"). RDS keeps minor versions current afterwards (auto minor
# version upgrade), which never fights the template.
ENGINE = rds.DatabaseInstanceEngine.mysql(
    version=rds.MysqlEngineVersion.of(
        facts.ACCOUNTING_MYSQL_VERSION, facts.ACCOUNTING_MYSQL_MAJOR_VERSION
    )
)
# Said explicitly (RDS's default for a new database is Extended Support, which costs extra
# once 8.4 leaves standard support): at the end of standard support RDS upgrades the database
# to a supported major version instead (RDS user guide, "Amazon RDS Extended Support").
ENGINE_LIFECYCLE_SUPPORT = rds.EngineLifecycleSupport.OPEN_SOURCE_RDS_EXTENDED_SUPPORT_DISABLED
# RDS for MySQL 8.4 (all versions) and 8.0.28 and later audit through the MariaDB Audit Plugin
# option (RDS user guide, "Options for MySQL DB instances"): connections and schema / privilege
# changes, not slurmdbd's every query.
AUDIT_OPTION = "MARIADB_AUDIT_PLUGIN"
AUDIT_EVENTS = "CONNECT,QUERY_DCL,QUERY_DDL"
# Enhanced Monitoring: OS metrics every minute.
MONITORING_INTERVAL = cdk.Duration.minutes(1)


class SlurmAccountingDatabase(Construct):
    """A MySQL database for slurmdbd, reachable only from the HyperPod nodes.

    HyperPod connects slurmdbd to it through ``Orchestrator.Slurm.AccountingDatabase``
    (Continuous provisioning only); the user name and password live in a
    generated Secrets Manager secret that the node role may read. The database
    is encrypted, backed up for 7 days, has Enhanced Monitoring, audits
    connections and DDL/DCL statements, and exports its logs (error, general,
    slow query, audit) to CloudWatch Logs. With the default
    ``removal_policy`` RETAIN it is deletion-protected and kept if it leaves
    the stack; with DESTROY it is deleted after a final snapshot.

    To use an existing database instead, skip this construct and pass an
    :class:`~hyperpod_cdk.cluster.AccountingDatabaseRef` to the cluster.

    :param vpc: the VPC (created or adopted).
    :param subnets: private subnets in at least two AZs (an RDS subnet group spans two).
    :param clients: the security group of the nodes that connect.
    :param instance_class: e.g. ``db.t4g.medium`` (the default when left out).
    :param multi_az: a synchronous standby in a second AZ; False when left out.
    :param removal_policy: RETAIN (default) or DESTROY (final snapshot, then deleted).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        clients: ec2.ISecurityGroup,
        instance_class: str | None = None,
        multi_az: bool = False,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            allow_all_outbound=False,
            description="Slurm accounting database: MySQL from the HyperPod nodes only",
        )
        self.security_group.add_ingress_rule(
            clients, ec2.Port.tcp(MYSQL_PORT), "MySQL from the HyperPod nodes"
        )
        # The nodes' group allows no egress but what it is given. The rule is
        # made here (not on the group's own construct) so that a group from
        # another stack does not come to depend on this one.
        ec2.CfnSecurityGroupEgress(
            self,
            "ClientEgress",
            group_id=clients.security_group_id,
            ip_protocol="tcp",
            from_port=MYSQL_PORT,
            to_port=MYSQL_PORT,
            destination_security_group_id=self.security_group.security_group_id,
            description="MySQL to the Slurm accounting database",
        )
        instance_type = ec2.InstanceType(
            (instance_class or DEFAULT_INSTANCE_CLASS).removeprefix("db.")
        )
        options = rds.OptionGroup(
            self,
            "Options",
            engine=ENGINE,
            description="Slurm accounting database: audit plugin",
            configurations=[
                rds.OptionConfiguration(
                    name=AUDIT_OPTION, settings={"SERVER_AUDIT_EVENTS": AUDIT_EVENTS}
                )
            ],
        )
        self.instance = rds.DatabaseInstance(
            self,
            "Instance",
            engine=ENGINE,
            instance_type=instance_type,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
            security_groups=[self.security_group],
            port=MYSQL_PORT,
            credentials=rds.Credentials.from_generated_secret("slurm"),
            storage_encrypted=True,
            allocated_storage=20,
            max_allocated_storage=200,
            multi_az=multi_az,
            deletion_protection=removal_policy != cdk.RemovalPolicy.DESTROY,
            backup_retention=cdk.Duration.days(7),
            # DESTROY still leaves a final snapshot: accounting history is small and precious.
            removal_policy=(
                cdk.RemovalPolicy.SNAPSHOT
                if removal_policy == cdk.RemovalPolicy.DESTROY
                else removal_policy
            ),
            option_group=options,
            cloudwatch_logs_exports=["audit", "error", "general", "slowquery"],
            monitoring_interval=MONITORING_INTERVAL,
            auto_minor_version_upgrade=True,
            engine_lifecycle_support=ENGINE_LIFECYCLE_SUPPORT,
            # an environment deployed with MySQL 8.0 is upgraded in place (the instance keeps
            # its data, endpoint and secret; take a snapshot first, see the config reference)
            allow_major_version_upgrade=True,
            publicly_accessible=False,
            iam_authentication=True,
        )
        assert self.instance.secret is not None
        self.secret = self.instance.secret
        # the credentials live as long as the database: a retained database without its secret
        # could only be reached after a password reset. ``instance.secret`` is the
        # SecretTargetAttachment; the AWS::SecretsManager::Secret is the instance's child
        # "Secret"
        if removal_policy == cdk.RemovalPolicy.RETAIN:
            generated = self.instance.node.find_child("Secret")
            assert isinstance(generated, secretsmanager.Secret)
            generated.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
            self.secret.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        self._acknowledge_findings(multi_az=multi_az, removal_policy=removal_policy)

    def _acknowledge_findings(self, *, multi_az: bool, removal_policy: cdk.RemovalPolicy) -> None:
        monitoring = self.instance.node.find_child("MonitoringRole")
        acknowledge(
            monitoring,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonRDSEnhancedMonitoringRole]",
            "RDS Enhanced Monitoring requires this AWS managed policy on its monitoring role; it only "
            "lets RDS write OS metrics to the RDSOSMetrics log group.",
        )
        acknowledge_controls(
            self.instance,
            "RDSInBackupPlan",
            "RDS automated backups keep 7 days of point-in-time recovery; an AWS Backup plan is an "
            "account-wide policy the environment does not own (it can select this instance by tag).",
        )
        secret = self.instance.node.find_child("Secret")
        acknowledge_controls(
            secret,
            "SecretsManagerRotationEnabled",
            "HyperPod reads these credentials when it configures slurmdbd; rotating them would break "
            "slurmdbd until the cluster is updated, so rotation is a planned operation.",
        )
        skip_check(
            cast(cdk.CfnResource, secret.node.default_child),
            "CKV_AWS_149",
            "HyperPod reads this secret when it configures slurmdbd; the Secrets Manager AWS managed "
            "key makes that read depend only on the IAM grant, with no key policy to get wrong.",
        )
        acknowledge_controls(
            secret,
            "SecretsManagerUsingKMSKey",
            "HyperPod reads this secret when it configures slurmdbd; the Secrets Manager AWS managed "
            "key makes that read depend only on the IAM grant, with no key policy to get wrong.",
        )
        acknowledge(
            secret,
            "AwsSolutions-SMG4",
            "HyperPod reads these credentials when it configures slurmdbd; rotating them would break "
            "slurmdbd until the cluster is updated, so rotation is a planned operation.",
        )
        if not multi_az:
            reason = (
                "Multi-AZ is a config choice (cluster.slurm.accounting_multi_az); accounting data is "
                "backed up daily and a lost instance only pauses job accounting."
            )
            acknowledge(self.instance, "AwsSolutions-RDS3", reason)
            acknowledge_controls(self.instance, "RDSMultiAZSupport", reason)
            skip_check(
                cast(cdk.CfnResource, self.instance.node.default_child), "CKV_AWS_157", reason
            )
        if removal_policy == cdk.RemovalPolicy.DESTROY:
            acknowledge(
                self.instance,
                "AwsSolutions-RDS10",
                "Deletion protection is off only because the config sets removal_policy: destroy and the "
                "deploy passed -c destroy_data=true; RDS still takes a final snapshot.",
            )
        acknowledge(
            self.instance,
            "AwsSolutions-RDS11",
            "slurmdbd connects to the standard MySQL port; the database is reachable only from the "
            "HyperPod node security group inside private subnets.",
        )

    @property
    def endpoint(self) -> str:
        """Host name of the database."""
        return self.instance.db_instance_endpoint_address

    @property
    def secret_arn(self) -> str:
        """ARN of the credentials secret."""
        return self.secret.secret_arn
