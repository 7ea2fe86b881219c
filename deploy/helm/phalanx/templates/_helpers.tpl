{{- /* Shared names, labels, images, derived values and the checks that fail with the chart's own messages. */ -}}

{{- /* Base name of every object: the release name, suffixed with -phalanx unless it already says phalanx. */ -}}
{{- define "phalanx.fullname" -}}
{{- if contains "phalanx" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-phalanx" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- /* Labels of every object; pass (dict "ctx" $ "component" "master"). */ -}}
{{- define "phalanx.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
{{ include "phalanx.selectorLabels" . }}
{{- end -}}

{{- /* Labels that select one component's pods; pass (dict "ctx" $ "component" "master"). */ -}}
{{- define "phalanx.selectorLabels" -}}
app.kubernetes.io/name: phalanx
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- /* Image of a phalanx binary; pass (dict "ctx" $ "name" "phalanx-master"). */ -}}
{{- define "phalanx.image" -}}
{{- $registry := .ctx.Values.imageRegistry | trimSuffix "/" -}}
{{- if $registry -}}{{ $registry }}/{{ end -}}{{ .name }}:{{ .ctx.Chart.AppVersion }}
{{- end -}}

{{- /* kube-scheduler image: images.kubeScheduler, or the upstream image at the cluster's version. */ -}}
{{- define "phalanx.kubeSchedulerImage" -}}
{{- if .Values.images.kubeScheduler -}}
{{- .Values.images.kubeScheduler -}}
{{- else -}}
{{- $v := semver .Capabilities.KubeVersion.Version -}}
{{- printf "registry.k8s.io/kube-scheduler:v%d.%d.%d" $v.Major $v.Minor $v.Patch -}}
{{- end -}}
{{- end -}}

{{- /* Pod-level settings shared by every Deployment. */ -}}
{{- define "phalanx.podCommon" -}}
priorityClassName: phalanx-system-priority
{{- with .Values.imagePullSecretName }}
imagePullSecrets:
  - name: {{ . }}
{{- end }}
{{- end -}}

{{- /* Replicas of component `component` prefer distinct nodes (a node's loss takes one at most);
      preferred, so a one-node cluster still runs them all. (dict "ctx" $ "component" "master") */ -}}
{{- define "phalanx.spreadReplicas" -}}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "phalanx.selectorLabels" . | nindent 14 }}
{{- end -}}

{{- /* The scheduler of task pods: phalanx, also for Determined's values coscheduler and preemption
      (both gang scheduling, the latter with priority preemption, which phalanx does together);
      default for default and for an empty value (Determined's "the default Kubernetes scheduler"). */ -}}
{{- define "phalanx.scheduler" -}}
{{- if has .Values.defaultScheduler (list "phalanx" "coscheduler" "preemption") }}phalanx{{ else }}default{{ end -}}
{{- end -}}

{{- /* Non-empty when the chart runs its own phalanx scheduler (kube-scheduler + extender). */ -}}
{{- define "phalanx.deployScheduler" -}}
{{- if and (eq (include "phalanx.scheduler" .) "phalanx") .Values.deployScheduler }}true{{ end -}}
{{- end -}}

{{- define "phalanx.dbHost" -}}
{{- .Values.db.hostAddress | default (printf "%s-db" (include "phalanx.fullname" .)) -}}
{{- end -}}

{{- define "phalanx.tlsDir" -}}/etc/phalanx/tls{{- end -}}

{{- define "phalanx.maxSlotsPerPod" -}}
{{- required "maxSlotsPerPod is required: set it to the number of slots (GPUs) per pod, the greatest common divisor of your node sizes (e.g. --set maxSlotsPerPod=8)" .Values.maxSlotsPerPod -}}
{{- end -}}

{{- define "phalanx.cpusPerSlot" -}}
{{- required "slotResourceRequests.cpu is required when slotType is cpu: the CPUs of one slot, below a node's allocatable CPUs (e.g. 7.5)" .Values.slotResourceRequests.cpu -}}
{{- end -}}

{{- /* The resource pools as master.yaml writes them (JSON list), each with its namespace filled in. */ -}}
{{- define "phalanx.resourcePools" -}}
{{- $pools := list -}}
{{- $names := list -}}
{{- range .Values.resourcePools -}}
{{- if has .pool_name $names -}}
{{- fail (printf "resourcePools: pool_name %q appears twice" .pool_name) -}}
{{- end -}}
{{- $names = append $names .pool_name -}}
{{- $pool := dict "pool_name" .pool_name "kubernetes_namespace" (.kubernetes_namespace | default $.Release.Namespace) -}}
{{- with .max_slots_per_pod }}{{ $_ := set $pool "max_slots_per_pod" . }}{{ end -}}
{{- with .task_container_defaults }}{{ $_ := set $pool "task_container_defaults" . }}{{ end -}}
{{- with .podSpecPolicy }}{{ $_ := set $pool "pod_spec_policy" . }}{{ end -}}
{{- $pools = append $pools $pool -}}
{{- end -}}
{{- toJson $pools -}}
{{- end -}}

{{- /* The distinct namespaces of the resource pools (JSON list): where the master and extender get pod rights. */ -}}
{{- define "phalanx.poolNamespaces" -}}
{{- $namespaces := list -}}
{{- range include "phalanx.resourcePools" . | fromJsonArray -}}
{{- $namespaces = append $namespaces .kubernetes_namespace -}}
{{- end -}}
{{- $namespaces | uniq | toJson -}}
{{- end -}}

{{- /* master.yaml's checkpoint_storage (JSON object), with the fields each type needs. */ -}}
{{- define "phalanx.checkpointStorage" -}}
{{- $cs := .Values.checkpointStorage -}}
{{- $out := dict "type" $cs.type -}}
{{- if eq $cs.type "shared_fs" -}}
{{- $_ := set $out "host_path" (required "checkpointStorage.hostPath is required when checkpointStorage.type is shared_fs" $cs.hostPath) -}}
{{- else if or (eq $cs.type "s3") (eq $cs.type "gcs") -}}
{{- $_ := set $out "bucket" (required (printf "checkpointStorage.bucket is required when checkpointStorage.type is %s" $cs.type) $cs.bucket) -}}
{{- else if eq $cs.type "azure" -}}
{{- $_ := set $out "container" (required "checkpointStorage.container is required when checkpointStorage.type is azure" $cs.container) -}}
{{- if not (or $cs.connection_string $cs.account_url) -}}
{{- fail "checkpointStorage: azure needs connection_string or account_url" -}}
{{- end -}}
{{- end -}}
{{- /* s3 keys go to pods through the Secret each pool namespace gets (checkpoint-storage-secret.yaml). */ -}}
{{- if include "phalanx.checkpointCredentials" . }}{{ $_ := set $out "credentials_secret" (include "phalanx.checkpointSecret" .) }}{{ end -}}
{{- $optional := dict "s3" (list "prefix" "endpointUrl") "gcs" (list "prefix") "azure" (list "connection_string" "account_url" "credential") -}}
{{- $snake := dict "endpointUrl" "endpoint_url" -}}
{{- range $key := get $optional $cs.type | default list -}}
{{- with get $cs $key }}{{ $_ := set $out (get $snake $key | default $key) . }}{{ end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /* The scheduler's KubeSchedulerConfiguration (YAML): deploy/scheduler/kube-scheduler-config.yaml, which
      files/ links to, keeping only the phalanx profile. A cluster keeps its own default-scheduler: a second
      scheduler serving that profile would race it for every ordinary pod. */ -}}
{{- define "phalanx.schedulerConfig" -}}
{{- $cfg := .Files.Get "files/kube-scheduler-config.yaml" | fromYaml -}}
{{- if or (not $cfg) (hasKey $cfg "Error") -}}
{{- fail (printf "files/kube-scheduler-config.yaml (a link to deploy/scheduler/kube-scheduler-config.yaml) is missing or invalid: %v" ($cfg.Error | default "empty")) -}}
{{- end -}}
{{- $profiles := list -}}
{{- range $cfg.profiles -}}
{{- if eq .schedulerName "phalanx" }}{{ $profiles = append $profiles . }}{{ end -}}
{{- end -}}
{{- if not $profiles -}}
{{- fail "deploy/scheduler/kube-scheduler-config.yaml has no profile with schedulerName phalanx" -}}
{{- end -}}
{{- $_ := set $cfg "profiles" $profiles -}}
{{- /* CPU slots request no GPU: the extender must see every pod, not only those asking for GPUs. */ -}}
{{- if eq .Values.slotType "cpu" -}}
{{- range $cfg.extenders }}{{ $_ := unset . "managedResources" }}{{ end -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{- /* Leader-election lease of the scheduler, from the shared config: "namespace/name". */ -}}
{{- define "phalanx.schedulerLease" -}}
{{- $le := (include "phalanx.schedulerConfig" . | fromYaml).leaderElection | default dict -}}
{{- printf "%s/%s" ($le.resourceNamespace | default "kube-system") ($le.resourceName | default "kube-scheduler") -}}
{{- end -}}

{{- /* host:port the extender listens on: the host of the shared config's (only) extender urlPrefix. */ -}}
{{- define "phalanx.extenderListen" -}}
{{- $extenders := (include "phalanx.schedulerConfig" . | fromYaml).extenders | default list -}}
{{- if ne (len $extenders) 1 -}}
{{- fail "deploy/scheduler/kube-scheduler-config.yaml must declare exactly one extender (phalanx-extender)" -}}
{{- end -}}
{{- (urlParse (first $extenders).urlPrefix).host -}}
{{- end -}}

{{- /* A random value kept across upgrades: key `key` of the release's Secret `name` when it exists
      (helm lookup; empty under `helm template`, which has no cluster), else `length` random letters
      and digits (crypto/rand). Computed once per rendering, so every template that includes it sees
      the same value; pass (dict "ctx" $ "name" "<secret>" "key" "<key>" "length" 32). */ -}}
{{- define "phalanx.keptRandom" -}}
{{- $cache := .ctx.Values.__phalanxKeptRandom -}}
{{- if not $cache }}{{ $cache = dict }}{{ $_ := set .ctx.Values "__phalanxKeptRandom" $cache }}{{ end -}}
{{- $id := printf "%s/%s" .name .key -}}
{{- if not (hasKey $cache $id) -}}
{{- $existing := lookup "v1" "Secret" .ctx.Release.Namespace .name -}}
{{- $old := "" -}}
{{- if $existing }}{{ $old = get ($existing.data | default dict) .key | b64dec }}{{ end -}}
{{- $_ := set $cache $id ($old | default (randAlphaNum (int .length))) -}}
{{- end -}}
{{- get $cache $id -}}
{{- end -}}

{{- define "phalanx.authSecret" -}}{{ include "phalanx.fullname" . }}-master-auth{{- end -}}
{{- define "phalanx.placementKeySecret" -}}{{ include "phalanx.fullname" . }}-placement-key{{- end -}}
{{- define "phalanx.checkpointSecret" -}}{{ include "phalanx.fullname" . }}-checkpoint-storage{{- end -}}

{{- /* The built-in accounts' password: defaultPassword, else the one generated into the auth Secret. */ -}}
{{- define "phalanx.defaultPassword" -}}
{{- .Values.defaultPassword | default (include "phalanx.keptRandom" (dict "ctx" . "name" (include "phalanx.authSecret" .) "key" "default-password" "length" 32)) -}}
{{- end -}}

{{- /* Non-empty when storage credentials go to pods through the Secret in each pool namespace. */ -}}
{{- define "phalanx.checkpointCredentials" -}}
{{- $cs := .Values.checkpointStorage -}}
{{- if and (eq $cs.type "s3") (or $cs.accessKey $cs.secretKey) }}true{{ end -}}
{{- end -}}

{{- /* Pod securityContext: non-root uid (and its group, which owns mounted volumes), seccomp RuntimeDefault. */ -}}
{{- define "phalanx.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: {{ .uid }}
  runAsGroup: {{ .uid }}
  fsGroup: {{ .uid }}
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- /* Container securityContext: non-root uid, read-only root file system, no privilege escalation,
      no capabilities, seccomp RuntimeDefault. */ -}}
{{- define "phalanx.containerSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: {{ .uid }}
  runAsGroup: {{ .uid }}
  readOnlyRootFilesystem: true
  allowPrivilegeEscalation: false
  capabilities: {drop: ["ALL"]}
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- /* Namespaces where the extender may patch and delete pods (JSON list): the pools' namespaces plus
      extenderNamespaces. */ -}}
{{- define "phalanx.extenderNamespaces" -}}
{{- concat (include "phalanx.poolNamespaces" . | fromJsonArray) .Values.extenderNamespaces | uniq | toJson -}}
{{- end -}}

{{- /* Type of the master's Service: NodePort with Determined's useNodePortForMaster, else masterServiceType. */ -}}
{{- define "phalanx.masterServiceType" -}}
{{- ternary "NodePort" .Values.masterServiceType .Values.useNodePortForMaster -}}
{{- end -}}
