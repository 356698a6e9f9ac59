{{/*
Names. The chart name can be overridden (nameOverride); the full name is "<release>-<chart>" unless
the release name already contains the chart name, truncated to 63 characters (DNS label).
*/}}
{{- define "gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* A name derived from the full name with a suffix, still within 63 characters. */}}
{{- define "gateway.suffixedName" -}}
{{- $root := index . 0 }}
{{- $suffix := index . 1 }}
{{- printf "%s-%s" (include "gateway.fullname" $root | trunc (int (sub 62 (len $suffix)))) $suffix | trimSuffix "-" }}
{{- end }}

{{- define "gateway.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gateway.labels" -}}
helm.sh/chart: {{ include "gateway.chart" . }}
{{ include "gateway.selectorLabels" . }}
{{ include "gateway.releaseLabels" . }}
{{- end }}

{{- /* The labels every object carries besides the name and instance. */}}
{{- define "gateway.releaseLabels" -}}
app.kubernetes.io/version: {{ include "gateway.version" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: llm-gateway
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- /*
The `helm test` pod's labels: its own name, so the workload's selector (the Deployment, the
PodDisruptionBudget, the Services, a PodMonitor) never takes a kept test pod for a gateway pod.
*/}}
{{- define "gateway.testLabels" -}}
helm.sh/chart: {{ include "gateway.chart" . }}
app.kubernetes.io/name: {{ include "gateway.name" . | trunc 58 | trimSuffix "-" }}-test
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "gateway.releaseLabels" . }}
app.kubernetes.io/component: test
{{- end }}

{{- define "gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Image: "repository@sha256:..." when image.digest is set, "repository:tag" otherwise, the tag
defaulting to appVersion. A tag set together with a digest fails rendering (gateway.validate): it
would be ignored, and a digest can never be contradicted by a moving tag.
*/}}
{{- define "gateway.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* The app.kubernetes.io/version label: the chart's appVersion for a digest, else the tag. */}}
{{- define "gateway.version" -}}
{{- if .Values.image.digest }}
{{- .Chart.AppVersion }}
{{- else }}
{{- include "gateway.imageTag" . }}
{{- end }}
{{- end }}

{{- define "gateway.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "gateway.imageTag" .) }}
{{- end }}
{{- end }}

{{/*
Termination budget (spec 3.2 and 8): preStop sleep + shutdown delay (still serving, readiness
failing) + drain deadline + the admin server's own 5 s ceiling + a margin for the tracing flush and
process exit. With the defaults: 0 + 5 + 300 + 5 + 20 = 330 seconds.
*/}}
{{- define "gateway.adminCloseCeilingSeconds" -}}5{{- end }}

{{- define "gateway.minTerminationGracePeriodSeconds" -}}
{{- $v := .Values }}
{{- add (int $v.preStopSleepSeconds) (int $v.gateway.shutdownDelaySecs) (int $v.gateway.shutdownTimeoutSecs) (int (include "gateway.adminCloseCeilingSeconds" .)) (int $v.terminationGraceMarginSeconds) }}
{{- end }}

{{- define "gateway.terminationGracePeriodSeconds" -}}
{{- $min := int (include "gateway.minTerminationGracePeriodSeconds" .) }}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- $min }}
{{- else }}
{{- $set := int .Values.terminationGracePeriodSeconds }}
{{- if lt $set $min }}
{{- fail (printf "terminationGracePeriodSeconds=%d is below the gateway's shutdown budget of %d s (preStopSleepSeconds %d + gateway.shutdownDelaySecs %d + gateway.shutdownTimeoutSecs %d + admin server ceiling %s + terminationGraceMarginSeconds %d): the kubelet would SIGKILL pods while streams still drain. Raise it, lower gateway.shutdownTimeoutSecs, or leave it empty to have it computed." $set $min (int .Values.preStopSleepSeconds) (int .Values.gateway.shutdownDelaySecs) (int .Values.gateway.shutdownTimeoutSecs) (include "gateway.adminCloseCeilingSeconds" .) (int .Values.terminationGraceMarginSeconds)) }}
{{- end }}
{{- $set }}
{{- end }}
{{- end }}

{{/* Replicas that exist in steady state: the HPA minimum when autoscaling, otherwise replicas. */}}
{{- define "gateway.effectiveReplicas" -}}
{{- if .Values.autoscaling.enabled }}
{{- int .Values.autoscaling.minReplicas }}
{{- else }}
{{- int .Values.replicas }}
{{- end }}
{{- end }}

{{/*
A simulator model file in TOML: top-level scalars, then one table per nested map. Written by hand
because toToml prints every number as a float (YAML numbers arrive as float64), and integer fields
read better as integers.
*/}}
{{- define "gateway.tomlValue" -}}
{{- if kindIs "string" . }}{{ toJson . }}
{{- else if kindIs "bool" . }}{{ . }}
{{- else if and (kindIs "float64" .) (eq (floor .) .) }}{{ int64 . }}
{{- else }}{{ . }}
{{- end }}
{{- end }}

{{- define "gateway.simulatorModelToml" -}}
{{- $model := . }}
{{- range $key := keys $model | sortAlpha }}
{{- $value := get $model $key }}
{{- if not (kindIs "map" $value) }}
{{ $key }} = {{ include "gateway.tomlValue" $value }}
{{- end }}
{{- end }}
{{- range $table := keys $model | sortAlpha }}
{{- $entries := get $model $table }}
{{- if kindIs "map" $entries }}

[{{ $table }}]
{{- range $key := keys $entries | sortAlpha }}
{{ $key }} = {{ include "gateway.tomlValue" (get $entries $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The simulator sidecar's aliases: one per configured model, or the built-in model "sim". */}}
{{- define "gateway.simulatorAliases" -}}
{{- $models := .Values.simulator.sidecar.models }}
{{- if $models }}
{{- keys $models | sortAlpha | toJson }}
{{- else }}
{{- list "sim" | toJson }}
{{- end }}
{{- end }}

{{/*
config.spec, plus one target per simulator model when the sidecar is enabled and wired
(simulator.sidecar.addTargets). A collision with a configured alias is an error rather than a
silent override.
*/}}
{{- define "gateway.assembledSpec" -}}
{{- $spec := deepCopy (default (dict) .Values.config.spec) }}
{{- $targets := deepCopy (default (dict) $spec.targets) }}
{{- $sim := .Values.simulator.sidecar }}
{{- if and $sim.enabled $sim.addTargets }}
{{- range $alias := include "gateway.simulatorAliases" . | fromJsonArray }}
{{- if hasKey $targets $alias }}
{{- fail (printf "simulator.sidecar.addTargets: alias %q is already defined in config.spec.targets; rename the simulator model or set simulator.sidecar.addTargets=false and wire it yourself" $alias) }}
{{- end }}
{{- $_ := set $targets $alias (dict "url" (printf "http://127.0.0.1:%d/v1" (int $sim.port))) }}
{{- end }}
{{- end }}
{{- if not $targets }}
{{- fail "config.spec.targets is empty: the gateway needs at least one alias. Set config.spec.targets (see docs/configuration.md), point config.existingConfigMap or config.existingSecret at your own configuration, or enable simulator.sidecar for a demo." }}
{{- end }}
{{- $_ := set $spec "targets" $targets }}
{{- toJson $spec }}
{{- end }}

{{/*
The file (Secret data key) of one literal key: a readable part made of the names involved, reduced
to the characters a Secret key allows, then the first 8 hex digits of the sha256 of the field's
path in the configuration, which keeps two fields apart whatever their names (target "a-b" and
provider "b" of target "a" read alike). Arguments: (list READABLE PATH).
*/}}
{{- define "gateway.keyFile" -}}
{{- $readable := regexReplaceAll "[^-._a-zA-Z0-9]" (index . 0) "_" | trunc 200 }}
{{- printf "%s-%s" $readable (sha256sum (index . 1) | trunc 8) }}
{{- end }}

{{/*
The literal keys of the assembled spec: every key field (auth.global_keys[], a key definition's
key, a literal token in a target's keys[], gateway_key on a target or a pool's provider entry) that
holds a string rather than a { from_file } / { from_env } reference. Returns
{"spec": ..., "data": {file: key}}: with keys.moveToSecret each such key is replaced by a
{ from_file: <keys.mountPath>/<file> } reference and its value goes to the key Secret as <file>;
without it the spec is unchanged and "data" says what stays literal (NOTES warns).
*/}}
{{- define "gateway.keyExtraction" -}}
{{- $spec := include "gateway.assembledSpec" . | fromJson }}
{{- $move := .Values.keys.moveToSecret }}
{{- $mount := trimSuffix "/" .Values.keys.mountPath }}
{{- $data := dict }}
{{- $auth := default (dict) $spec.auth }}
{{- $definitions := default (dict) $auth.key_definitions }}
{{- if $auth.global_keys }}
{{- $list := list }}
{{- range $i, $key := $auth.global_keys }}
{{- if kindIs "string" $key }}
{{- $file := include "gateway.keyFile" (list (printf "global-key-%d" $i) (printf "auth.global_keys[%d]" $i)) }}
{{- $_ := set $data $file $key }}
{{- $key = dict "from_file" (printf "%s/%s" $mount $file) }}
{{- end }}
{{- $list = append $list $key }}
{{- end }}
{{- if $move }}{{ $_ := set $auth "global_keys" $list }}{{ end }}
{{- end }}
{{- range $name, $definition := $definitions }}
{{- if kindIs "string" $definition.key }}
{{- $file := include "gateway.keyFile" (list (printf "key-%s" $name) (list "auth" "key_definitions" $name "key" | toJson)) }}
{{- $_ := set $data $file $definition.key }}
{{- if $move }}{{ $_ := set $definition "key" (dict "from_file" (printf "%s/%s" $mount $file)) }}{{ end }}
{{- end }}
{{- end }}
{{- range $alias, $target := $spec.targets }}
{{- if kindIs "string" $target.gateway_key }}
{{- $file := include "gateway.keyFile" (list (printf "gateway-key-%s" $alias) (list "targets" $alias "gateway_key" | toJson)) }}
{{- $_ := set $data $file $target.gateway_key }}
{{- if $move }}{{ $_ := set $target "gateway_key" (dict "from_file" (printf "%s/%s" $mount $file)) }}{{ end }}
{{- end }}
{{- if $target.keys }}
{{- $list := list }}
{{- range $i, $key := $target.keys }}
{{- /* A string naming a key definition is that definition, not a key. */}}
{{- if and (kindIs "string" $key) (not (hasKey $definitions $key)) }}
{{- $file := include "gateway.keyFile" (list (printf "client-key-%s-%d" $alias $i) (list "targets" $alias "keys" $i | toJson)) }}
{{- $_ := set $data $file $key }}
{{- $key = dict "from_file" (printf "%s/%s" $mount $file) }}
{{- end }}
{{- $list = append $list $key }}
{{- end }}
{{- if $move }}{{ $_ := set $target "keys" $list }}{{ end }}
{{- end }}
{{- range $i, $provider := default (list) $target.providers }}
{{- if kindIs "string" $provider.gateway_key }}
{{- $file := include "gateway.keyFile" (list (printf "gateway-key-%s-%v" $alias (default $i $provider.name)) (list "targets" $alias "providers" $i "gateway_key" | toJson)) }}
{{- $_ := set $data $file $provider.gateway_key }}
{{- if $move }}{{ $_ := set $provider "gateway_key" (dict "from_file" (printf "%s/%s" $mount $file)) }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson (dict "spec" $spec "data" $data) }}
{{- end }}

{{/* The configuration spec the gateway reads: the assembled spec, keys moved out when asked. */}}
{{- define "gateway.configSpec" -}}
{{- (include "gateway.keyExtraction" . | fromJson).spec | toJson }}
{{- end }}

{{/* The chart-managed key Secret's data (empty unless keys.moveToSecret found literal keys). */}}
{{- define "gateway.keySecretData" -}}
{{- if and .Values.keys.moveToSecret (not (include "gateway.externalConfig" .)) }}
{{- (include "gateway.keyExtraction" . | fromJson).data | toJson }}
{{- else }}{}
{{- end }}
{{- end }}

{{/*
Whether the chart-managed key Secret exists and is mounted: when it holds keys, and always in
resource mode with keys.moveToSecret, so that a config.spec change that adds the first literal key
(or removes the last) changes the Secret and the object, never the pod template.
*/}}
{{- define "gateway.keySecretMounted" -}}
{{- if or (include "gateway.keySecretData" . | fromJson) (and (include "gateway.resourceMode" .) .Values.keys.moveToSecret) }}true{{- end }}
{{- end }}

{{/* The GatewayConfig envelope written into the chart-managed ConfigMap. */}}
{{- define "gateway.configDocument" -}}
{{- $doc := dict
  "apiVersion" "llm-gateway.dev/v1alpha1"
  "kind" "GatewayConfig"
  "metadata" (dict "name" (include "gateway.fullname" .) "namespace" (include "gateway.namespace" .))
  "spec" (include "gateway.configSpec" . | fromJson) }}
{{- if hasSuffix ".json" .Values.config.key }}
{{- toPrettyJson $doc }}
{{- else }}
{{- toYaml $doc }}
{{- end }}
{{- end }}

{{/*
Namespaces whose EndpointSlices the gateway lists and watches, comma-separated: those of the
`service:` provider entries of config.spec (the release's namespace for an entry that names none)
and endpointDiscovery.namespaces. Empty without a `service:` entry: then no Role is rendered.
*/}}
{{- define "gateway.discoveryNamespaces" -}}
{{- $namespaces := list }}
{{- range $alias, $target := (.Values.config.spec.targets | default dict) }}
{{- if kindIs "map" $target }}
{{- range $provider := ($target.providers | default list) }}
{{- if and (kindIs "map" $provider) (kindIs "map" $provider.service) }}
{{- $namespaces = append $namespaces ($provider.service.namespace | default (include "gateway.namespace" $)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- range .Values.endpointDiscovery.namespaces }}
{{- $namespaces = append $namespaces . }}
{{- end }}
{{- $namespaces | uniq | sortAlpha | join "," }}
{{- end }}

{{/* "true" when the gateway reads a GatewayConfig object through the Kubernetes API (config.source resource). */}}
{{- define "gateway.resourceMode" -}}
{{- if eq .Values.config.source "resource" }}true{{- end }}
{{- end }}

{{/* The GatewayConfig object's name in resource mode, and the Lease its replicas elect a status writer with. */}}
{{- define "gateway.configResourceName" -}}
{{- include "gateway.fullname" . }}
{{- end }}
{{- define "gateway.statusLeaseName" -}}
{{- printf "gatewayconfig-%s-status" (include "gateway.configResourceName" .) }}
{{- end }}

{{- define "gateway.externalConfig" -}}
{{- if or .Values.config.existingConfigMap .Values.config.existingSecret }}true{{- end }}
{{- end }}

{{/* Checks that span several values (the schema covers single values). Renders nothing. */}}
{{- define "gateway.validate" -}}
{{- if and .Values.image.digest .Values.image.tag }}
{{- fail (printf "image.tag %q is set together with image.digest %s: the digest pins the image and the tag would be ignored. To deploy by tag, clear the digest as well (image.digest: '' in your values, or --set image.digest= --set image.tag=%s); to deploy another build, set only image.digest. The chart published with a release carries that release's digest by default." .Values.image.tag .Values.image.digest .Values.image.tag) }}
{{- end }}
{{- if and .Values.config.existingConfigMap .Values.config.existingSecret }}
{{- fail "config.existingConfigMap and config.existingSecret are mutually exclusive" }}
{{- end }}
{{- if and (include "gateway.resourceMode" .) (include "gateway.externalConfig" .) }}
{{- fail "config.source resource renders the GatewayConfig object from config.spec: config.existingConfigMap and config.existingSecret only apply to config.source file" }}
{{- end }}
{{- if and (include "gateway.resourceMode" .) .Values.config.rolloutOnChange }}
{{- fail "config.rolloutOnChange does not apply to config.source resource: a change of config.spec changes the GatewayConfig object, which every replica serves within a second, and never rolls the pods" }}
{{- end }}
{{- if and (include "gateway.externalConfig" .) .Values.config.rolloutOnChange }}
{{- fail "config.rolloutOnChange needs the chart-managed ConfigMap: the chart cannot checksum config.existingConfigMap or config.existingSecret" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled .Values.metrics.podMonitor.enabled }}
{{- fail "metrics.serviceMonitor.enabled and metrics.podMonitor.enabled are mutually exclusive: both would scrape every pod twice" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.adminService.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs adminService.enabled (the ServiceMonitor selects the admin Service); use metrics.podMonitor otherwise" }}
{{- end }}
{{- $mounts := list .Values.config.mountPath .Values.keys.mountPath }}
{{- if .Values.keys.existingSecret }}{{ $mounts = append $mounts .Values.keys.existingSecretMountPath }}{{ end }}
{{- if ne (len $mounts) (len (uniq $mounts)) }}
{{- fail (printf "config.mountPath, keys.mountPath and keys.existingSecretMountPath must be different directories (got %s): each is a volume of its own" (join ", " $mounts)) }}
{{- end }}
{{- if eq (int .Values.gateway.port) (int .Values.gateway.adminPort) }}
{{- fail "gateway.port and gateway.adminPort must differ: health and metrics never share the proxy port" }}
{{- end }}
{{- if and .Values.simulator.sidecar.enabled (or (eq (int .Values.simulator.sidecar.port) (int .Values.gateway.port)) (eq (int .Values.simulator.sidecar.port) (int .Values.gateway.adminPort))) }}
{{- fail "simulator.sidecar.port must differ from gateway.port and gateway.adminPort (the containers share the pod's network namespace)" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- $np := .Values.networkPolicy }}
{{- if and $np.enabled $np.egress.enabled (not $np.egress.to) }}
{{- fail "networkPolicy.egress.enabled with an empty networkPolicy.egress.to would allow DNS only: the gateway could reach no upstream provider (nor Redis or a tracing collector). Add one egress rule per destination to networkPolicy.egress.to, for example [{\"to\": [{\"ipBlock\": {\"cidr\": \"0.0.0.0/0\", \"except\": [\"169.254.169.254/32\"]}}], \"ports\": [{\"port\": 443, \"protocol\": \"TCP\"}]}] for HTTPS providers outside the cluster, or a namespaceSelector/podSelector peer for in-cluster ones; or set networkPolicy.egress.enabled=false." }}
{{- end }}
{{- $strategy := .Values.strategy | default dict }}
{{- $strategyType := $strategy.type | default "RollingUpdate" }}
{{- if not (has $strategyType (list "RollingUpdate" "Recreate")) }}
{{- fail (printf "strategy.type %q is not a Deployment strategy: use RollingUpdate (the default) or Recreate" $strategyType) }}
{{- end }}
{{- if and (eq $strategyType "Recreate") $strategy.rollingUpdate }}
{{- fail "strategy.type Recreate does not take strategy.rollingUpdate (the API server refuses it), and the chart's default strategy sets rollingUpdate: remove it with strategy.rollingUpdate: null in your values (or --set strategy.rollingUpdate=null). Recreate stops every pod before starting new ones, so the gateway is unavailable during each rollout." }}
{{- end }}
{{- end }}

{{/*
Fails unless the cluster serves a monitoring CRD. `helm template` has no cluster: pass
--api-versions monitoring.coreos.com/v1/<Kind>, or set metrics.skipCrdCheck.
*/}}
{{- define "gateway.requireCrd" -}}
{{- $root := index . 0 }}
{{- $kind := index . 1 }}
{{- $value := index . 2 }}
{{- if not (or $root.Values.metrics.skipCrdCheck ($root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" $kind))) }}
{{- fail (printf "%s is enabled but the cluster does not serve monitoring.coreos.com/v1 %s (install the Prometheus Operator CRDs first). With helm template, pass --api-versions monitoring.coreos.com/v1/%s or set metrics.skipCrdCheck=true." $value $kind $kind) }}
{{- end }}
{{- end }}

{{/* Labels and selector shared by the monitoring objects. */}}
{{- define "gateway.metricsPrefix" -}}
{{- .Values.gateway.metricsPrefix }}
{{- end }}
