"""``make verify``: prove that a deployed environment works, the way an HPC engineer accepts a
cluster: every node healthy and in place, EFA present, NCCL all-reduce across nodes at the
bandwidth the instance type should reach, the shared file system mounted everywhere at its
throughput and linked to S3 both ways, containers with GPUs, Slurm accounting recording jobs.

Modules: :mod:`.model` (results, the run, what it made), :mod:`.gates` (the gates and the
decisions; the tables are :mod:`hyperpod_cdk.facts.gates`), :mod:`.parsers` (nccl-tests, fio, dd and mount
output), :mod:`.aws_checks` (cluster, health, data repository links), :mod:`.slurm` and
:mod:`.eks` (the node-side checks of each orchestrator), :mod:`.runner` (order, budgets,
clean-up) and :mod:`.cli` (the command line).
"""
