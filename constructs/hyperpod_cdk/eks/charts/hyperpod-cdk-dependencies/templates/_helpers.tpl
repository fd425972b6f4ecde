{{/*
Shared pieces of the hyperpod-cdk-dependencies templates.
*/}}

{{/* Labels on every object: who installed it, and the component it belongs to. */}}
{{- define "hpcdk.labels" -}}
{{- $root := .root -}}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/part-of: hyperpod-dependencies
app.kubernetes.io/component: {{ .component }}
{{- with $root.Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The HyperPod components live in aws-hyperpod: HyperPod looks for them there. */}}
{{- define "hpcdk.requireHyperPodNamespace" -}}
{{- if ne .Release.Namespace "aws-hyperpod" -}}
{{- fail (printf "%s must be released in namespace aws-hyperpod (HyperPod looks for it there), not %q" .component .Release.Namespace) -}}
{{- end -}}
{{- end }}

{{/*
The image of a component: <registry>/<repository>:<tag>. The registry is .Values.imageRegistry
when set; else the image's own registry; else (AWS-owned regional images) the Amazon ECR registry
of the image's account in .Values.region.
Call with (dict "root" $ "name" "<images key>").
*/}}
{{- define "hpcdk.image" -}}
{{- $root := .root -}}
{{- $image := index $root.Values.images .name -}}
{{- $registry := "" -}}
{{- if $root.Values.imageRegistry -}}
{{- $registry = trimSuffix "/" $root.Values.imageRegistry -}}
{{- else if $image.registry -}}
{{- $registry = $image.registry -}}
{{- else -}}
{{- $region := required "region is required: the image of this component lives in the cluster region's Amazon ECR registry" $root.Values.region -}}
{{- $account := index ($image.accounts | default dict) $region -}}
{{- if not $account -}}
{{- fail (printf "images.%s is not published in region %q (known: %s); set imageRegistry to a registry that holds %s:%s" .name $region (keys $image.accounts | sortAlpha | join ", ") $image.repository $image.tag) -}}
{{- end -}}
{{- $registry = printf "%s.dkr.ecr.%s.amazonaws.com" $account $region -}}
{{- end -}}
{{- printf "%s/%s:%s" $registry $image.repository $image.tag -}}
{{- end }}

{{/* Tolerates the taint HyperPod puts on a node it found unhealthy (pods keep running there). */}}
{{- define "hpcdk.healthTaintToleration" -}}
- key: sagemaker.amazonaws.com/node-health-status
  operator: Equal
  value: Unschedulable
  effect: NoSchedule
{{- end }}

{{/*
The tolerations of a pod: the HyperPod health taint, CriticalAddonsOnly, the NoSchedule taint
of the device the pod serves (.deviceTaint, optional), then .Values.extraTolerations.
*/}}
{{- define "hpcdk.tolerations" -}}
{{ include "hpcdk.healthTaintToleration" . }}
- key: CriticalAddonsOnly
  operator: Exists
{{- with .deviceTaint }}
- key: {{ . }}
  operator: Exists
  effect: NoSchedule
{{- end }}
{{- with .root.Values.extraTolerations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
A required node affinity on HyperPod's instance-type label.
Call with (dict "root" $ "list" "<instanceTypes key>" "extra" "<extraInstanceTypes key or empty>").
*/}}
{{- define "hpcdk.instanceTypeAffinity" -}}
{{- $types := index .root.Values.instanceTypes .list -}}
{{- if .extra -}}
{{- $types = concat $types (index .root.Values.extraInstanceTypes .extra | default list) | uniq -}}
{{- end -}}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
          - key: node.kubernetes.io/instance-type
            operator: In
            values:
              {{- toYaml $types | nindent 14 }}
{{- end }}

{{/* The schema of a job's runPolicy (kubeflow.org v1 and v2beta1). */}}
{{- define "hpcdk.runPolicySchema" -}}
type: object
properties:
  activeDeadlineSeconds: {type: integer, format: int64, minimum: 0}
  backoffLimit: {type: integer, format: int32, minimum: 0}
  cleanPodPolicy: {type: string, enum: [All, Running, None]}
  managedBy: {type: string}
  schedulingPolicy:
    type: object
    properties:
      minAvailable: {type: integer, format: int32}
      minResources:
        type: object
        additionalProperties:
          anyOf: [{type: integer}, {type: string}]
          x-kubernetes-int-or-string: true
      priorityClass: {type: string}
      queue: {type: string}
      scheduleTimeoutSeconds: {type: integer, format: int32}
  suspend: {type: boolean}
  ttlSecondsAfterFinished: {type: integer, format: int32, minimum: 0}
{{- end }}

{{/*
The schema of a job's replica specs: one property per replica type (.types, e.g. [Master,
Worker]), each {replicas, restartPolicy, template}. An unknown replica type or field is rejected
by the API server (kubectl's strict field validation); the pod template stays open (the API
server validates the pods when the operator creates them).
*/}}
{{- define "hpcdk.replicaSpecsSchema" -}}
type: object
minProperties: 1
properties:
{{- range .types }}
  {{ . }}:
    type: object
    required: [template]
    properties:
      replicas: {type: integer, format: int32, minimum: 0}
      restartPolicy: {type: string, enum: [Always, OnFailure, Never, ExitCode]}
      template:
        type: object
        x-kubernetes-preserve-unknown-fields: true
{{- end }}
{{- end }}

{{/* The schema of a job's status (conditions, per-replica counts and the scale selector). */}}
{{- define "hpcdk.jobStatusSchema" -}}
type: object
properties:
  completionTime: {type: string, format: date-time}
  lastReconcileTime: {type: string, format: date-time}
  startTime: {type: string, format: date-time}
  conditions:
    type: array
    items:
      type: object
      required: [status, type]
      properties:
        lastTransitionTime: {type: string, format: date-time}
        lastUpdateTime: {type: string, format: date-time}
        message: {type: string}
        reason: {type: string}
        status: {type: string}
        type: {type: string}
  replicaStatuses:
    type: object
    additionalProperties:
      type: object
      properties:
        active: {type: integer, format: int32}
        failed: {type: integer, format: int32}
        succeeded: {type: integer, format: int32}
        selector: {type: string}
        labelSelector:
          type: object
          x-kubernetes-preserve-unknown-fields: true
{{- end }}
