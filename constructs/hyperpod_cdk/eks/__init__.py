"""Amazon EKS orchestration for HyperPod: the cluster, its dependencies and add-ons."""
