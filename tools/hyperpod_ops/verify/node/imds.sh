# shellcheck shell=bash
# imds check, on the controller (as root): the instance metadata service (IMDS) answers root and
# a system account, and refuses a user's UID and a user's Slurm job (the lifecycle step imds,
# cluster.node_setup.restrict_imds). Only the HTTP status of the IMDSv2 token request is printed:
# no token and no credentials leave the node.
# HPV_UID: a UID of the users' range; HPV_PARTITION, HPV_JOB: the partition and name of the job
# run as the first local user of the users file (UID 2000-59999, a login shell), when there is one.
imds_token() {
  curl -sS -m 5 -o /dev/null -w '%{http_code}\n' -X PUT \
    -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' http://169.254.169.254/latest/api/token
}
export -f imds_token
hpv_section root bash -c imds_token
# daemon (UID 1): a system account of every Ubuntu AMI
hpv_section system setpriv --reuid=1 --regid=1 --clear-groups bash -c imds_token
hpv_section user setpriv --reuid="$HPV_UID" --regid="$HPV_UID" --clear-groups bash -c imds_token
user="$(getent passwd | awk -F: '$3 >= 2000 && $3 <= 59999 && $7 ~ /sh$/ {print $1; exit}')"
if [[ -n "$user" && -n "$HPV_PARTITION" ]]; then
  echo "HPV-USER $user"
  hpv_section job runuser -u "$user" -- srun --nodes=1 --time=2 --nice=10000 \
    --partition="$HPV_PARTITION" --job-name="$HPV_JOB" bash -c imds_token
fi
hpv_done
