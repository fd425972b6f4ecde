"""Directory users and pam_slurm_adopt on the fake node (lifecycle_assets/steps/directory.sh).

The node is what the synth of a directory-user config gives it (``dry.from_config``): the real
entry script, settings.json with the directory's settings (the secrets' ARNs, never their
values), and the fake node's Secrets Manager (fake_node/root/run/fake-secretsmanager). The tests
read what the steps render into the fake root: sssd.conf, the CA certificate, nsswitch.conf, the
PAM and sudoers files, the sshd drop-in.

The project does not install SSSD, so sssd.conf is checked here with configparser and by the
fake node's ``sssctl config-check`` (fake_node/bin/sssctl); the real ``sssctl`` checks it too
where the machine has one.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from lifecycle_testkit import PROJECT_ROOT, dry
from support import real_tools

BIND = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ldap-bind-AbCdEf"
CA = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ldap-ca-AbCdEf"
# what the fake node's Secrets Manager holds for the two ARNs
FAKE_SECRETS = dry.FAKE_NODE / "root" / "run" / "fake-secretsmanager" / "hyperpod"
PASSWORD = (FAKE_SECRETS / "ldap-bind-AbCdEf").read_text().strip()
CERTIFICATE = (FAKE_SECRETS / "ldap-ca-AbCdEf").read_text().strip()
DIRECTORY: dict[str, Any] = {
    "uri": "ldaps://dc1.example.com,ldaps://dc2.example.com:636",
    "search_base": "dc=example,dc=com",
    "bind_dn": "cn=hyperpod-bind,ou=service,dc=example,dc=com",
    "bind_password_secret_arn": BIND,
    "ca_certificate_secret_arn": CA,
    "allowed_groups": {"login": ["hpc users", "hpc-admins"], "compute": ["hpc users"]},
    "sudo_groups": ["hpc-admins", "Domain Admins"],
}
ALLOWED = {"controller": None, "login": "hpc users, hpc-admins", "compute": "hpc users"}
SSSD_PACKAGES = ["sssd-ldap", "libnss-sss", "libpam-sss", "sssd-tools"]
DIRECTORY_STEP = "directory users"
PAM_LINE = "account required pam_slurm_adopt.so"

# The lines entrypoint.sh gets with this step file (proposed with it): the file sourced beside
# the other steps, and the two steps right after `users` in the Slurm nodes' steps.
ENTRY_SOURCE = '# shellcheck source=steps/directory.sh\nsource "$HERE/steps/directory.sh"\n'
SLURM_STEPS = re.compile(r"^SLURM_STEPS=\(([^)]*)\)", re.M)


def with_directory_steps(scripts: Path) -> None:
    """Run the directory steps from the node's copy of entrypoint.sh, as the proposed change
    does, unless the shipped entry script does already."""
    entry = scripts / dry.ENTRY_SCRIPT
    text = entry.read_text()
    if 'source "$HERE/steps/directory.sh"' in text:
        return
    anchor = 'source "$HERE/steps/observability.sh"\n'
    found = SLURM_STEPS.search(text)
    assert anchor in text and found and " users " in found.group(1), "entrypoint.sh changed shape"
    steps = found.group(1).replace(" users ", " users directory pam_slurm_adopt ", 1)
    text = text[: found.start(1)] + steps + text[found.end(1) :]
    entry.write_text(text.replace(anchor, anchor + ENTRY_SOURCE, 1))


def write_config(path: Path, node_setup: dict[str, Any]) -> Path:
    """config/default.yaml with ``node_setup``, at ``path``."""
    data = yaml.safe_load((PROJECT_ROOT / dry.DEFAULT_CONFIG).read_text())
    data["cluster"]["node_setup"] = node_setup
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class Node:
    """A prepared fake node of a directory-user config: run it, read its files."""

    def __init__(self, node: str, base: Path, address: str) -> None:
        self.node, self.base, self.address = node, base, address
        self.root = base / "node"

    def run(self, fail: str | None = None) -> dry.DryRun:
        return dry.run(self.node, self.base, fail=fail, address=self.address)

    def read(self, path: str) -> str:
        return (self.root / path.lstrip("/")).read_text()

    def mode(self, path: str) -> int:
        return stat.S_IMODE((self.root / path.lstrip("/")).stat().st_mode)

    def settings(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Change the node's settings.json (a later deploy of the config)."""
        path = self.base / "scripts" / "settings.json"
        settings = json.loads(path.read_text())
        change(settings)
        path.write_text(json.dumps(settings))


NodeMaker = Callable[..., Node]


def make_node(
    base: Path,
    node: str,
    node_setup: dict[str, Any] | None = None,
    *,
    sssd_installed: bool = True,
) -> Node:
    setup = {"directory": DIRECTORY, "pam_slurm_adopt": True} if node_setup is None else node_setup
    base.mkdir(parents=True)
    cluster = dry.from_config(node, write_config(base / "env.yaml", setup), None, PROJECT_ROOT)
    dry.prepare(node, base / "fake", cluster=cluster)
    with_directory_steps(base / "fake" / "scripts")
    if sssd_installed:
        # the image has SSSD (the fake dpkg-query lists these as installed)
        with (base / "fake" / "node" / "var/lib/fake-dpkg/installed").open("a") as installed:
            installed.write("".join(f"{p}\n" for p in SSSD_PACKAGES))
    return Node(node, base / "fake", cluster.address)


@pytest.fixture
def directory_node(tmp_path: Path) -> NodeMaker:
    """``directory_node(node, node_setup=None, sssd_installed=True)``: a fresh fake node of
    config/default.yaml with ``node_setup`` (default: the directory and pam_slurm_adopt)."""
    count = iter(range(1000))

    def make(node: str, node_setup: dict[str, Any] | None = None, **kwargs: Any) -> Node:
        return make_node(tmp_path / f"{node}-{next(count)}", node, node_setup, **kwargs)

    return make


@pytest.fixture(scope="session")
def ran(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[Node, dry.DryRun, dry.DryRun]]:
    """``ran(node)``: the node of the directory config run twice (shared: read only)."""
    cache: dict[str, tuple[Node, dry.DryRun, dry.DryRun]] = {}

    def get(node: str) -> tuple[Node, dry.DryRun, dry.DryRun]:
        if node not in cache:
            made = make_node(tmp_path_factory.mktemp(f"directory-{node}") / "n", node)
            first = made.run()
            cache[node] = (made, first, made.run())
        return cache[node]

    return get


SLURM_NODES = ["controller", "login", "compute"]


def sssd_conf(node: Node) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(delimiters=("=",), comment_prefixes=("#",))
    parser.read_string(node.read("/etc/sssd/sssd.conf"))
    return parser


# -- what the directory step renders -----------------------------------------------------------


@pytest.mark.parametrize("node", SLURM_NODES)
def test_the_directory_step_runs_on_every_slurm_node(ran, node: str) -> None:
    _, first, _ = ran(node)
    assert first.returncode == 0, first.output
    assert DIRECTORY_STEP in first.steps
    # right after the users step (skipped here: no users file)
    lines = first.output.splitlines()
    users = lines.index(
        "[lifecycle] skip: users and groups (no users file (node_setup.users_file))"
    )
    assert lines[users + 1] == f"[lifecycle] step: {DIRECTORY_STEP}"


@pytest.mark.parametrize("node", SLURM_NODES)
def test_sssd_conf_talks_tls_to_a_verified_server_and_is_root_only(ran, node: str) -> None:
    made, _, _ = ran(node)
    assert made.mode("/etc/sssd/sssd.conf") == 0o600
    conf = sssd_conf(made)
    assert conf.get("sssd", "domains") == "hyperpod"
    assert conf.get("sssd", "services") == "nss, pam"
    assert conf.get("sssd", "config_file_version") == "2"
    domain = dict(conf.items("domain/hyperpod"))
    assert domain["id_provider"] == "ldap"
    assert domain["auth_provider"] == "ldap"
    assert domain["ldap_uri"] == "ldaps://dc1.example.com,ldaps://dc2.example.com:636"
    assert all(u.startswith("ldaps://") for u in domain["ldap_uri"].split(","))
    assert domain["ldap_id_use_start_tls"] == "false"  # TLS from the first byte
    assert domain["ldap_tls_reqcert"] == "demand"
    assert domain["ldap_tls_cacert"] == "/etc/sssd/certs/ca.pem"
    assert domain["ldap_search_base"] == "dc=example,dc=com"
    assert domain["ldap_default_bind_dn"] == "cn=hyperpod-bind,ou=service,dc=example,dc=com"
    assert domain["ldap_default_authtok_type"] == "password"
    assert domain["ldap_default_authtok"] == PASSWORD
    assert domain["ldap_schema"] == "ad"
    assert domain["ldap_id_mapping"] == "true"
    assert domain["override_homedir"] == "/fsx/home/%u"  # homes on the shared file system
    assert made.read("/etc/sssd/certs/ca.pem").strip() == CERTIFICATE
    assert made.mode("/etc/sssd/certs/ca.pem") == 0o644


@pytest.mark.parametrize("node", SLURM_NODES)
def test_the_groups_allowed_to_log_in_are_the_node_types(ran, node: str) -> None:
    domain = dict(sssd_conf(ran(node)[0]).items("domain/hyperpod"))
    if ALLOWED[node] is None:
        # no group for the controller: nobody logs in (an empty simple list would let all in)
        assert domain["access_provider"] == "deny"
        assert "simple_allow_groups" not in domain
    else:
        assert domain["access_provider"] == "simple"
        assert domain["simple_allow_groups"] == ALLOWED[node]


@pytest.mark.parametrize("node", SLURM_NODES)
def test_users_resolve_through_sssd_after_the_local_files(ran, node: str) -> None:
    made, first, _ = ran(node)
    nss = {
        line.split(":")[0]: line.split(":", 1)[1].split()
        for line in made.read("/etc/nsswitch.conf").splitlines()
        if ":" in line and not line.startswith("#")
    }
    for database in ("passwd", "group"):
        assert nss[database][0] == "files"
        assert nss[database][-1] == "sss"
        assert nss[database].count("sss") == 1
    assert nss["hosts"] == ["files", "dns"]  # the others are left alone
    assert "pam-auth-update --enable mkhomedir" in first.commands
    session = made.read("/etc/pam.d/common-session").splitlines()
    assert sum("pam_mkhomedir.so" in line for line in session) == 1
    assert (made.root / "fsx/home").is_dir()


@pytest.mark.parametrize("node", SLURM_NODES)
def test_sudo_groups_get_a_validated_sudoers_file(ran, node: str) -> None:
    made, first, _ = ran(node)
    rules = [
        line
        for line in made.read("/etc/sudoers.d/hyperpod-directory").splitlines()
        if not line.startswith("#")
    ]
    assert rules == ["%hpc-admins ALL=(ALL:ALL) ALL", r"%Domain\ Admins ALL=(ALL:ALL) ALL"]
    assert made.mode("/etc/sudoers.d/hyperpod-directory") == 0o440
    assert "visudo -cf /etc/sudoers.d/.hyperpod-directory.new" in first.commands
    assert not (made.root / "etc/sudoers.d/.hyperpod-directory.new").exists()


@pytest.mark.parametrize("node", SLURM_NODES)
def test_sssd_is_checked_and_started_once(ran, node: str) -> None:
    _, first, second = ran(node)
    assert "sssctl config-check" in first.commands
    assert "Issues identified by validators: 0" in first.output
    # started after its file is checked
    check = first.commands.index("sssctl config-check")
    assert first.commands.index("systemctl enable --now sssd") > check
    assert second.returncode == 0, second.output
    assert second.commands == []  # nothing left to change


RFC2307_KEYS = {**DIRECTORY, "ldap_schema": "rfc2307", "ssh_public_key_attribute": "sshPublicKey"}


@pytest.fixture(scope="session")
def rendered_sssd_confs(ran, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every sssd.conf the step renders: controller, login, compute, each for the AD directory
    and for an RFC 2307 one with SSH keys (``<variant>-<node>`` -> the file's text)."""
    files = {f"ad-{node}": ran(node)[0].read("/etc/sssd/sssd.conf") for node in SLURM_NODES}
    for node in SLURM_NODES:
        made = make_node(
            tmp_path_factory.mktemp(f"rfc2307-{node}") / "n", node, {"directory": RFC2307_KEYS}
        )
        assert made.run().returncode == 0
        files[f"rfc2307-{node}"] = made.read("/etc/sssd/sssd.conf")
    return files


@pytest.mark.real_tools
@pytest.mark.parametrize("variant", ["ad", "rfc2307"])
@pytest.mark.parametrize("node", SLURM_NODES)
def test_the_real_sssctl_accepts_every_rendered_file(
    rendered_sssd_confs: dict[str, str], tmp_path: Path, variant: str, node: str
) -> None:
    """``sssctl config-check -c FILE`` (sssd-tools) on each rendered file, with the ``conf.d``
    folder beside it that sssd-common ships next to /etc/sssd/sssd.conf (sssctl reports a
    missing one as an error, which is not the file's)."""
    sssctl = real_tools.tool("sssctl")
    conf = tmp_path / "sssd.conf"
    conf.write_text(rendered_sssd_confs[f"{variant}-{node}"])
    conf.chmod(0o600)
    (tmp_path / "conf.d").mkdir()
    done = subprocess.run(
        [sssctl, "config-check", "-c", str(conf)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Issues identified by validators: 0" in done.stdout


def test_a_real_tools_test_skips_with_the_reason_where_the_tool_is_absent(tmp_path: Path) -> None:
    """The skip path of the tier: with a PATH that has no sssctl, the test skips and says which
    program and which Debian package it needs."""
    with pytest.raises(pytest.skip.Exception) as skipped:
        real_tools.tool("sssctl", path=str(tmp_path))
    assert str(skipped.value) == (
        "sssctl is not installed (Debian package sssd-tools); this real-tools test needs it"
    )


def test_the_secrets_never_reach_the_log_or_the_uploaded_files(ran) -> None:
    made, first, second = ran("login")
    assert f"reading the bind password from Secrets Manager ({BIND})" in first.output
    assert f"reading the CA certificate from Secrets Manager ({CA})" in first.output
    for run in (first, second):
        assert PASSWORD not in run.output
    log = made.root / "var/log/provision/hyperpod-lifecycle.log"
    assert PASSWORD not in log.read_text()
    for path in (made.base / "scripts").rglob("*"):
        if path.is_file():
            assert PASSWORD not in path.read_text(errors="replace"), path
    assert "password" not in json.dumps(
        json.loads((made.base / "scripts/settings.json").read_text())["node_setup"]["directory"]
    ).replace("bind_password_secret_arn", "")


def test_sssd_is_installed_from_the_distribution_when_the_image_lacks_it(directory_node) -> None:
    made = directory_node("login", sssd_installed=False)
    result = made.run()
    assert result.returncode == 0, result.output
    install = [c for c in result.commands if c.startswith("apt-get")]
    assert install[0] == "apt-get -y -o DPkg::Lock::Timeout=120 update"
    assert f"apt-get -y -o DPkg::Lock::Timeout=120 install {' '.join(SSSD_PACKAGES)}" in install


def test_homes_on_the_local_disk_are_made_under_home(directory_node) -> None:
    made = directory_node("compute", {"directory": DIRECTORY, "home_on_shared_storage": False})
    assert made.run().returncode == 0
    assert dict(sssd_conf(made).items("domain/hyperpod"))["override_homedir"] == "/home/%u"


# ssh.service as systemd reads it on the node: the unit, then its drop-ins (the folders systemd
# searches, a drop-in of the same name in an earlier folder wins; applied in name order).
UNIT_DIRS = (
    "etc/systemd/system",
    "run/systemd/system",
    "usr/lib/systemd/system",
    "lib/systemd/system",
)
EIC_DROP_IN = "usr/lib/systemd/system/ssh.service.d/ec2-instance-connect.conf"


def ssh_unit_text(root: Path) -> str:
    """What ``systemctl cat ssh.service`` prints on the fake node (read from its unit files)."""
    unit = next(root / d / "ssh.service" for d in UNIT_DIRS if (root / d / "ssh.service").exists())
    parts = [f"# {unit}\n{unit.read_text()}"]
    drop_ins: dict[str, Path] = {}
    for folder in UNIT_DIRS:
        for path in sorted((root / folder / "ssh.service.d").glob("*.conf")):
            drop_ins.setdefault(path.name, path)
    parts += [f"# {drop_ins[name]}\n{drop_ins[name].read_text()}" for name in sorted(drop_ins)]
    return "\n".join(parts)


def exec_start(unit_text: str) -> list[str]:
    """The ExecStart lines systemd runs, from a ``systemctl cat`` text (``ExecStart=`` resets)."""
    found: list[str] = []
    for line in unit_text.splitlines():
        if line.startswith("ExecStart="):
            value = line.removeprefix("ExecStart=").strip()
            found = [*found, value] if value else []
    return found


def test_ec2_instance_connect_overrides_authorized_keys_on_the_fake_node() -> None:
    """The fake node is an AWS image with ec2-instance-connect: its ssh.service drop-in puts
    AuthorizedKeysCommand on sshd's command line (aws/aws-ec2-instance-connect-config
    src/deb_systemd/ssh.service.d/ec2-instance-connect.conf), which wins over sshd_config.d."""
    [command] = exec_start(ssh_unit_text(dry.FAKE_NODE / "root"))
    assert '-o "AuthorizedKeysCommand /usr/share/ec2-instance-connect/' in command


def test_keys_from_the_directory_reach_sshd(directory_node) -> None:
    """Slurm review row 7.3 (AWS's HyperPod SSSD setup, awsome-distributed-training
    LifecycleScripts/base-config/setup_sssd.py, removes ec2-instance-connect "because it
    overrides AuthorizedKeysCommand in sshd_config"): the unit sshd runs with has no
    AuthorizedKeysCommand of its own once the keys come from the directory."""
    setup = {"directory": {**DIRECTORY, "ssh_public_key_attribute": "sshPublicKey"}}
    made = directory_node("login", setup)
    result = made.run()
    assert result.returncode == 0, result.output
    assert "apt-get -y -o DPkg::Lock::Timeout=120 remove ec2-instance-connect" in result.commands
    assert not (made.root / EIC_DROP_IN).exists()
    assert exec_start(ssh_unit_text(made.root)) == ["/usr/sbin/sshd -D $SSHD_OPTS"]
    # the command line changed: a restart (a reload re-executes sshd with its old command line)
    assert result.commands.index("systemctl daemon-reload") < result.commands.index(
        "systemctl restart ssh"
    )
    assert result.commands.index("sshd -t") < result.commands.index("systemctl restart ssh")
    assert "systemctl reload ssh" not in result.commands
    again = made.run()
    assert again.returncode == 0 and again.commands == [], again.output
    conf = sssd_conf(made)
    assert conf.get("sssd", "services") == "nss, pam, ssh"
    assert conf.get("domain/hyperpod", "ldap_user_ssh_public_key") == "sshPublicKey"
    drop_in = made.read("/etc/ssh/sshd_config.d/hyperpod-directory.conf").splitlines()
    assert "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys %u" in drop_in
    assert "AuthorizedKeysCommandUser nobody" in drop_in
    # without the attribute there is no drop-in (and none is left from before)
    made.settings(lambda s: s["node_setup"]["directory"].pop("ssh_public_key_attribute"))
    again = made.run()
    assert again.returncode == 0, again.output
    assert not (made.root / "etc/ssh/sshd_config.d/hyperpod-directory.conf").exists()
    assert "systemctl reload ssh" in again.commands


def test_without_directory_keys_ec2_instance_connect_stays(ran) -> None:
    made, first, _ = ran("login")
    assert (made.root / EIC_DROP_IN).exists()
    assert not any("ec2-instance-connect" in c for c in first.commands)


@pytest.mark.real_tools
def test_systemd_reads_ssh_service_without_the_override(directory_node) -> None:
    """The same, as systemd itself reads the unit: ``systemd-analyze --root=<node>
    cat-config systemd/system/ssh.service`` (what ``systemctl cat`` prints; systemctl takes no
    --root for cat)."""
    analyze = real_tools.tool("systemd-analyze")
    made = directory_node(
        "login", {"directory": {**DIRECTORY, "ssh_public_key_attribute": "sshPublicKey"}}
    )

    def cat() -> str:
        done = subprocess.run(
            [analyze, f"--root={made.root}", "cat-config", "systemd/system/ssh.service"],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    assert "AuthorizedKeysCommand" in " ".join(exec_start(cat()))
    assert made.run().returncode == 0
    assert exec_start(cat()) == ["/usr/sbin/sshd -D $SSHD_OPTS"]


def sshd_effective(root: Path, tmp_path: Path) -> dict[str, str]:
    """``sshd -T`` (openssh-server) as the node's ssh.service starts it: a main config with a
    host key that includes the node's rendered sshd_config.d, and the ``-o`` options of the
    unit's ExecStart (systemd's ``%%`` read as ``%``). sshd -T needs /run/sshd: it runs in a
    private mount namespace with its own /run, the host's is never touched."""
    sshd, unshare = real_tools.tool("sshd"), real_tools.tool("unshare")
    if os.geteuid() != 0:
        pytest.skip("sshd -T in a private mount namespace needs root")
    tmp_path.mkdir(parents=True, exist_ok=True)
    key = tmp_path / "host_ed25519"
    subprocess.run(
        [real_tools.tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
    )
    main = tmp_path / "sshd_config"
    main.write_text(f"HostKey {key}\nInclude {root}/etc/ssh/sshd_config.d/*.conf\n")
    [command] = exec_start(ssh_unit_text(root))
    words = shlex.split(command.replace("%%", "%"))
    options = [w for i, w in enumerate(words) if i and words[i - 1] == "-o" or w == "-o"]
    done = subprocess.run(
        [unshare, "--mount", "--propagation", "private", "sh", "-c",
         'mount -t tmpfs tmpfs /run && mkdir -m 0755 /run/sshd && exec "$@"', "sh",
         sshd, "-T", "-f", str(main), *options],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)


@pytest.mark.real_tools
def test_the_real_sshd_asks_sssd_for_keys_once_the_override_is_gone(
    directory_node, tmp_path: Path
) -> None:
    """Slurm review row 7.3 with the real sshd: before the step, the command line of
    ec2-instance-connect's drop-in wins over the rendered sshd_config.d file; after it, sshd
    asks SSSD (sss_ssh_authorizedkeys) for a directory user's key."""
    made = directory_node(
        "login", {"directory": {**DIRECTORY, "ssh_public_key_attribute": "sshPublicKey"}}
    )
    drop_in = made.root / "etc/ssh/sshd_config.d"
    drop_in.mkdir(parents=True, exist_ok=True)
    (drop_in / "hyperpod-directory.conf").write_text(
        "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys %u\nAuthorizedKeysCommandUser nobody\n"
    )
    before = sshd_effective(made.root, tmp_path / "before")
    assert before["authorizedkeyscommand"].startswith("/usr/share/ec2-instance-connect/")
    assert made.run().returncode == 0
    after = sshd_effective(made.root, tmp_path / "after")
    assert after["authorizedkeyscommand"] == "/usr/bin/sss_ssh_authorizedkeys %u"
    assert after["authorizedkeyscommanduser"] == "nobody"


def test_a_changed_directory_restarts_sssd_with_the_checked_file(directory_node) -> None:
    made = directory_node("login")
    assert made.run().returncode == 0
    made.settings(
        lambda s: s["node_setup"]["directory"]["allowed_groups"].update(login=["research"])
    )
    again = made.run()
    assert again.returncode == 0, again.output
    assert again.commands == ["sssctl config-check", "systemctl restart sssd"]
    assert dict(sssd_conf(made).items("domain/hyperpod"))["simple_allow_groups"] == "research"


def test_no_sudo_group_leaves_no_sudoers_file(directory_node) -> None:
    made = directory_node("login", {"directory": {**DIRECTORY, "sudo_groups": []}})
    assert made.run().returncode == 0
    assert not list((made.root / "etc").glob("sudoers.d/*hyperpod*"))


def test_rules_visudo_rejects_are_never_put_in_place(directory_node) -> None:
    made = directory_node("login")
    result = made.run(fail="visudo")
    assert result.returncode == 1
    assert (
        f"[lifecycle] FAILED in step '{DIRECTORY_STEP}': visudo rejects the sudoers rules of "
        "node_setup.directory.sudo_groups" in result.output
    )
    assert not list((made.root / "etc").glob("sudoers.d/*hyperpod*"))


def test_a_config_sssctl_rejects_fails_the_node(directory_node) -> None:
    made = directory_node("login")
    result = made.run(fail="sssctl")
    assert result.returncode == 1
    assert (
        f"[lifecycle] FAILED in step '{DIRECTORY_STEP}': sssctl config-check rejects "
        "/etc/sssd/sssd.conf" in result.output
    )
    assert "systemctl enable --now sssd" not in result.commands


# -- reading the secrets -----------------------------------------------------------------------


def test_a_secrets_manager_outage_at_boot_is_retried(directory_node) -> None:
    made = directory_node("login")
    (made.root / "run/fake-secretsmanager-outage").write_text("2\n")
    result = made.run()
    assert result.returncode == 0, result.output
    assert "[lifecycle] cannot read the CA certificate yet (1/5)" in result.output
    assert "[lifecycle] cannot read the CA certificate yet (2/5)" in result.output
    assert "(3/5)" not in result.output


def test_an_unreadable_secret_fails_the_node_naming_it_and_the_fix(directory_node) -> None:
    made = directory_node("compute")
    result = made.run(fail="aws")
    assert result.returncode == 1
    assert (
        f"[lifecycle] FAILED in step '{DIRECTORY_STEP}': cannot read the CA certificate from "
        f"Secrets Manager ({CA}) after 5 tries: aws: simulated failure; the execution role "
        "needs secretsmanager:GetSecretValue on it" in result.output
    )
    assert "and a closed network the secretsmanager endpoint" in result.output
    assert not (made.root / "etc/sssd/sssd.conf").exists()


def test_a_secret_of_another_name_is_not_found(directory_node) -> None:
    other = BIND.replace("ldap-bind-AbCdEf", "ldap-bind-ZzZzZz")
    made = directory_node("login", {"directory": {**DIRECTORY, "bind_password_secret_arn": other}})
    result = made.run()
    assert result.returncode == 1
    assert "ResourceNotFoundException" in result.output
    assert f"cannot read the bind password from Secrets Manager ({other})" in result.output


def test_a_ca_secret_without_a_certificate_fails(directory_node) -> None:
    made = directory_node("login")
    (made.root / "run/fake-secretsmanager/hyperpod/ldap-ca-AbCdEf").write_text("not a cert\n")
    result = made.run()
    assert result.returncode == 1
    assert "the CA certificate secret holds no PEM certificate" in result.output


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("first line\nsecond line\n", "the bind password secret holds more than one line"),
        (" padded \n", "the bind password begins or ends with a space"),
    ],
)
def test_a_password_sssd_conf_cannot_hold_fails_the_node(
    directory_node, password: str, why: str
) -> None:
    made = directory_node("login")
    (made.root / "run/fake-secretsmanager/hyperpod/ldap-bind-AbCdEf").write_text(password)
    result = made.run()
    assert result.returncode == 1
    assert f"[lifecycle] FAILED in step '{DIRECTORY_STEP}': {why}" in result.output
    assert not (made.root / "etc/sssd/sssd.conf").exists()


# -- pam_slurm_adopt ---------------------------------------------------------------------------


def adopt_lines(node: Node) -> list[str]:
    return [line for line in node.read("/etc/pam.d/sshd").splitlines() if "pam_slurm_adopt" in line]


def test_pam_slurm_adopt_comes_before_common_account_once(ran) -> None:
    """Before ``@include common-account``, not after: libpam-sss's profile puts ``account
    sufficient pam_localuser.so`` there (the fake node's common-account has it, as Debian's
    pam-auth-update writes it), which ends the stack for local users before a later rule
    (real_tools.md finding 2; tests/real/test_real_pam.py shows it with the real module)."""
    made, first, second = ran("compute")
    assert "pam_slurm_adopt" in first.steps and "pam_slurm_adopt" in second.steps
    assert adopt_lines(made) == [PAM_LINE]  # once, after two runs
    lines = made.read("/etc/pam.d/sshd").splitlines()
    assert lines.index("account    required     pam_nologin.so") < lines.index(PAM_LINE)
    assert lines.index(PAM_LINE) + 1 == lines.index("@include common-account")
    assert "account\tsufficient\t\t\tpam_localuser.so " in made.read("/etc/pam.d/common-account")


def test_an_adopt_rule_after_common_account_is_moved_before_it(directory_node) -> None:
    """A node set up by the earlier scripts (the rule appended last) is put right."""
    made = directory_node("compute", {"pam_slurm_adopt": True})
    sshd = made.root / "etc/pam.d/sshd"
    sshd.write_text(sshd.read_text() + PAM_LINE + "\n")
    assert made.run().returncode == 0
    lines = sshd.read_text().splitlines()
    assert adopt_lines(made) == [PAM_LINE]
    assert lines.index(PAM_LINE) + 1 == lines.index("@include common-account")


def test_pam_systemd_is_off_and_logind_masked_where_sessions_are_adopted(ran) -> None:
    """Slurm review row 7.5, https://slurm.schedmd.com/pam_slurm_adopt.html: "The pam_systemd
    module will conflict with pam_slurm_adopt, so you need to disable it in all files that are
    included in sshd [...]. You should also stop and mask systemd-logind." """
    made, first, second = ran("compute")
    assert "pam-auth-update --disable systemd" in first.commands
    for name in ["sshd", "common-session", "common-account", "common-auth"]:
        path = made.root / "etc/pam.d" / name
        text = path.read_text() if path.exists() else ""
        assert not [
            line for line in text.splitlines() if "pam_systemd" in line and not line.startswith("#")
        ], name
    assert first.commands.index("systemctl stop systemd-logind") < first.commands.index(
        "systemctl mask systemd-logind"
    )
    assert (made.root / "run/fake-systemd/masked/systemd-logind").exists()
    assert not any("logind" in c or "pam-auth-update" in c for c in second.commands)


@pytest.mark.parametrize("node", ["controller", "login"])
def test_pam_systemd_stays_where_nothing_is_adopted(ran, node: str) -> None:
    made, first, _ = ran(node)
    assert "session\toptional\tpam_systemd.so" in made.read("/etc/pam.d/common-session")
    assert not any("logind" in c for c in first.commands)


@pytest.mark.parametrize("node", ["controller", "login"])
def test_pam_slurm_adopt_never_on_controller_or_login(ran, node: str) -> None:
    made, first, _ = ran(node)
    assert "pam_slurm_adopt" not in first.steps
    assert first.skipped["pam_slurm_adopt"] == (
        f"compute nodes only: on a {node} node it locks users out, awsome-distributed-ai issue 777"
    )
    assert adopt_lines(made) == []


def test_pam_slurm_adopt_is_off_by_default(directory_node) -> None:
    made = directory_node("compute", {"directory": DIRECTORY})
    result = made.run()
    assert result.returncode == 0, result.output
    assert result.skipped["pam_slurm_adopt"] == "node_setup.pam_slurm_adopt is off"
    assert adopt_lines(made) == []


def test_a_compute_node_without_the_module_fails_clearly(directory_node) -> None:
    made = directory_node("compute", {"pam_slurm_adopt": True})
    for module in made.root.rglob("pam_slurm_adopt.so"):
        module.unlink()
    result = made.run()
    assert result.returncode == 1
    assert (
        "[lifecycle] FAILED in step 'pam_slurm_adopt': pam_slurm_adopt.so is not on this node "
        "(looked in /opt/slurm/lib/security and PAM's directories)" in result.output
    )
    assert "set cluster.node_setup.pam_slurm_adopt: false" in result.output
    assert adopt_lines(made) == []


def test_a_module_beside_slurm_is_named_by_its_path(directory_node) -> None:
    made = directory_node("compute", {"pam_slurm_adopt": True})
    for module in made.root.rglob("pam_slurm_adopt.so"):
        module.unlink()
    beside = made.root / "opt/slurm/lib/security/pam_slurm_adopt.so"
    beside.parent.mkdir(parents=True)
    beside.write_bytes(b"")
    assert made.run().returncode == 0
    assert adopt_lines(made) == ["account required /opt/slurm/lib/security/pam_slurm_adopt.so"]


def test_an_existing_adopt_rule_is_kept(directory_node) -> None:
    made = directory_node("compute", {"pam_slurm_adopt": True})
    sshd = made.root / "etc/pam.d/sshd"
    sshd.write_text(sshd.read_text() + "-account    required      pam_slurm_adopt.so\n")
    assert made.run().returncode == 0
    assert adopt_lines(made) == ["-account    required      pam_slurm_adopt.so"]
    lines = sshd.read_text().splitlines()
    assert lines.index(adopt_lines(made)[0]) + 1 == lines.index("@include common-account")


@pytest.mark.parametrize(
    ("flags", "warned"),
    [
        ("PrologFlags=Contain,X11", False),
        # slurm.conf takes spaces around '=' (real slurmctld: `PrologFlags = Alloc,Contain`)
        ("PrologFlags = Alloc,Contain", False),
        ("  prologflags =contain", False),
        ("PrologFlags=Alloc", True),
        ("", True),
    ],
)
def test_a_slurm_without_the_extern_step_is_warned_about(
    directory_node, flags: str, warned: bool
) -> None:
    made = directory_node("compute", {"pam_slurm_adopt": True})
    conf = made.root / "var/spool/slurmd/conf-cache/slurm.conf"
    conf.write_text(f"ClusterName=ml-research\n{flags}\n")
    result = made.run()
    assert result.returncode == 0, result.output
    assert ("WARNING: slurm.conf has no PrologFlags=Contain" in result.output) is warned


# -- no directory ------------------------------------------------------------------------------


def test_without_a_directory_the_step_says_which_setting(tmp_path: Path) -> None:
    base = dry.prepare("login", tmp_path / "login")
    with_directory_steps(base / "scripts")
    result = dry.run("login", base)
    assert result.returncode == 0, result.output
    assert result.skipped[DIRECTORY_STEP] == "no directory (node_setup.directory)"
    assert result.skipped["pam_slurm_adopt"] == "node_setup.pam_slurm_adopt is off"
    assert not (base / "node/etc/sssd").exists()
    assert os.path.getsize(base / "node/etc/nsswitch.conf") == os.path.getsize(
        dry.FAKE_NODE / "root/etc/nsswitch.conf"
    )
