{{/*
Shared pieces of the hyperpod-cdk-cluster-objects templates.
*/}}

{{/* Labels on every object: who installed it, and the component it belongs to. */}}
{{- define "hpcdko.labels" -}}
{{- $root := .root -}}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/part-of: hyperpod-cdk
app.kubernetes.io/component: {{ .component }}
{{- with $root.Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The HyperPod cluster the objects belong to (required: the release follows the cluster). */}}
{{- define "hpcdko.annotations" -}}
hyperpod-cdk.aws/cluster-arn: {{ required "clusterArn is required: the HyperPod cluster the objects belong to" .Values.clusterArn | quote }}
{{- end }}
