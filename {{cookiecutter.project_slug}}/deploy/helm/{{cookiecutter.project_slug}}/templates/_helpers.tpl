{{/* Names come from Chart.yaml and the release, never from the project template. */}}
{{- define "app.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "app.fullname" -}}
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

{{- define "app.selectorLabels" -}}
app.kubernetes.io/name: {{ include "app.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "app.labels" -}}
{{ include "app.chartLabels" . }}
{{ include "app.selectorLabels" . }}
{{- end }}

{{- define "app.chartLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Pods of the release that are not the service (the migration Job, the helm test, k6 runners):
part-of the app instead of named after it, so that no selector of the service (Deployment, Service,
PodDisruptionBudget, HPA, topology spread, NetworkPolicy) ever matches them. Add a component.
*/}}
{{- define "app.helperLabels" -}}
{{ include "app.chartLabels" . }}
app.kubernetes.io/part-of: {{ include "app.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* What the NetworkPolicy lets reach the service from inside the namespace: the helpers above. */}}
{{- define "app.helperSelector" -}}
app.kubernetes.io/part-of: {{ include "app.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Whether this release runs the migration Job: "true" on install, with a tag alone (what it names
may have moved), with migrations.always, and when `live` (the release's Deployment as the cluster
has it, from `lookup`) does not carry this very image in its migrated-image annotation. Else
empty: a values-only upgrade (replicas, log level) does not wait on the database.

Why skipping is safe (a pod never serves a schema older than its code): the annotation is written
only by a release that had migrations on, and the Deployment only changes once the pre-upgrade
Job has succeeded (a failed one stops the upgrade before any object changes). So a live
Deployment naming digest D was written by a release that ran D's migrations, or that skipped them
because the one before it named D: by induction, D's migrations ran to the end, and the schema
only moves forward. `helm template` and Argo CD have no cluster to look up: the Job always runs.
--no-hooks breaks the chain: after it, upgrade once with migrations.always.
*/}}
{{- define "app.migrationNeeded" -}}
{{- $root := .root }}
{{- $migrations := $root.Values.migrations }}
{{- if $migrations.enabled }}
{{- if or $root.Release.IsInstall $migrations.always (not $root.Values.image.digest) }}true
{{- else }}
{{- $annotations := (((.live | default dict).metadata | default dict).annotations | default dict) }}
{{- if ne (index $annotations (include "app.migratedImageKey" $root) | default "") (include "app.image" $root) }}true{{ end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "app.migratedImageKey" -}}migrations.{{ include "app.name" . }}/image{{- end }}

{{/*
checksum/secret: a new value rolls the pods: the hash of the live database Secret's key, read by
`lookup` at install/upgrade time (so a rotated Secret rolls the pods on the next `helm upgrade`;
`helm template` has no cluster and hashes nothing). The chart never writes that Secret: a URL given
as a value would be kept in every revision of Helm's release history.
*/}}
{{- define "app.secretChecksum" -}}
{{- $db := .Values.database }}
{{- include "app.checksumOfSecret" (dict "root" . "created" false "template" "" "name" (include "app.databaseSecret" .) "key" $db.existingSecretKey) }}
{{- end }}

{{/* checksum/api-keys (auth=api_key bakes): the same for the Secret of API_KEY_HASHES. */}}
{{- define "app.apiKeyChecksum" -}}
{{- $keys := .Values.auth.apiKey }}
{{- include "app.checksumOfSecret" (dict "root" . "created" (and (not $keys.existingSecret) $keys.hashes) "template" "secret-api-keys.yaml" "name" (include "app.apiKeySecret" .) "key" $keys.existingSecretKey) }}
{{- end }}

{{/* checksum/webhook (jobs=postgres bakes): the same for the Secret of WEBHOOK_SECRET, which
only the user creates; empty without one. */}}
{{- define "app.webhookChecksum" -}}
{{- $webhook := (.Values.worker | default dict).webhook | default dict }}
{{- if $webhook.existingSecret }}
{{- include "app.checksumOfSecret" (dict "root" . "created" false "template" "" "name" $webhook.existingSecret "key" $webhook.existingSecretKey) }}
{{- end }}
{{- end }}

{{/* The hash of `template` when the chart writes that Secret (`created`), else of key `key` of the
live Secret `name`. */}}
{{- define "app.checksumOfSecret" -}}
{{- if .created }}
{{- include (print .root.Template.BasePath "/" .template) .root | sha256sum }}
{{- else }}
{{- $live := lookup "v1" "Secret" .root.Release.Namespace .name }}
{{- index ($live.data | default dict) .key | default "" | sha256sum }}
{{- end }}
{{- end }}

{{/*
imagePullPolicy: as set, else IfNotPresent for an image pinned by digest (it cannot change under a
node) and Always for a tag alone (a node holding an older image under the same tag would run it,
the migration Job's pod too). An explicit IfNotPresent or Never with a tag alone is refused.
*/}}
{{- define "app.pullPolicy" -}}
{{- $image := .Values.image }}
{{- if and (not $image.digest) $image.pullPolicy (ne $image.pullPolicy "Always") }}
{{- fail (printf "image.pullPolicy %s with a tag alone lets each node run whatever it cached under %s: deploy by digest (--set image.digest=sha256:..., printed by the image's CI run) or pull the tag every time (image.pullPolicy Always)" $image.pullPolicy (include "app.image" .)) }}
{{- end }}
{{- $image.pullPolicy | default (ternary "IfNotPresent" "Always" (not (empty $image.digest))) }}
{{- end }}

{{/* repository:tag, pinned to a digest when image.digest is set (the digest is what runs). */}}
{{- define "app.image" -}}
{{- $reference := printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $reference .Values.image.digest }}
{{- else }}
{{- $reference }}
{{- end }}
{{- end }}

{{- define "app.databaseSecret" -}}
{{- default (printf "%s-database" (include "app.fullname" .)) .Values.database.existingSecret }}
{{- end }}

{{- define "app.apiKeySecret" -}}
{{- default (printf "%s-api-keys" (include "app.fullname" .)) .Values.auth.apiKey.existingSecret }}
{{- end }}

{{/*
Checks that a JSON schema cannot express, because they compare two values.
  connections: (max replicas + maxSurge) x (poolMaxSize + 1 readiness probe connection) +
               worker connections + 1 migration connection must fit in
               maxConnections - reservedConnections;
  worker:      (jobs=postgres) its grace period and heartbeat timeout outlast the longest job;
               a webhook URL has its Secret and, with networkPolicy, its receiver's peers;
  pool:        poolMinSize <= poolMaxSize;
  shutdown:    terminationGracePeriodSeconds > preStop sleep + drain + 10 s of close, the
               service's Database.close bound (db.py CLOSE_SECONDS: the pool and the probe's
               connection together); the strict ">" leaves a second at least for uvicorn's
               two 0.1 s pauses (its main loop's tick, the one before the drain) and the exit;
  ports:       metrics.port differs from server.port (metrics have a port of their own).
*/}}
{{- define "app.checks" -}}
{{- $db := .Values.database }}
{{- $replicas := int .Values.replicaCount }}
{{- if .Values.autoscaling.enabled }}
{{- $replicas = int .Values.autoscaling.maxReplicas }}
{{- if gt (int .Values.autoscaling.minReplicas) $replicas }}
{{- fail (printf "autoscaling.minReplicas (%d) exceeds autoscaling.maxReplicas (%d)" (int .Values.autoscaling.minReplicas) $replicas) }}
{{- end }}
{{- end }}
{{- $pods := add $replicas (int .Values.strategy.maxSurge) }}
{{- $workers := include "app.workerConnections" . | int }}
{{- $needed := add (mul $pods (add1 (int $db.poolMaxSize))) $workers 1 }}
{{- $budget := sub (int $db.maxConnections) (int $db.reservedConnections) }}
{{- if gt $needed $budget }}
{{- $ofWorkers := ternary (printf " + %d of worker pods incl. surge" $workers) "" (gt $workers 0) }}
{{- fail (printf "database pools need %d connections ((%d pods incl. surge) x (poolMaxSize %d + 1 readiness probe)%s + 1 migration) but the database allows %d (maxConnections %d - reservedConnections %d): lower database.poolMaxSize or the replica ceiling, or put PgBouncer in front" $needed $pods (int $db.poolMaxSize) $ofWorkers $budget (int $db.maxConnections) (int $db.reservedConnections)) }}
{{- end }}
{{- with include "app.workerEnabled" . }}
{{- $worker := $.Values.worker }}
{{- $longest := int $worker.webhook.timeoutSeconds }}
{{- if le (int $worker.terminationGracePeriodSeconds) (add $longest 10) }}
{{- fail (printf "worker.terminationGracePeriodSeconds (%d) must exceed the longest job (worker.webhook.timeoutSeconds %d) + 10 s connection close = %d" (int $worker.terminationGracePeriodSeconds) $longest (add $longest 10)) }}
{{- end }}
{{- if le (int $worker.heartbeatTimeoutSeconds) $longest }}
{{- fail (printf "worker.heartbeatTimeoutSeconds (%d) must exceed the longest job (worker.webhook.timeoutSeconds %d), or a slow job runs twice" (int $worker.heartbeatTimeoutSeconds) $longest) }}
{{- end }}
{{- if and $worker.webhook.url (not $worker.webhook.existingSecret) }}
{{- fail "worker.webhook.url needs worker.webhook.existingSecret, the Secret holding WEBHOOK_SECRET" }}
{{- end }}
{{- if and $worker.autoscaling.enabled (not $.Values.metrics.serviceMonitor.enabled) }}
{{- fail "worker.autoscaling.enabled needs metrics.serviceMonitor.enabled: the queue depth it scales on is the workers' scraped jobs_in_queue" }}
{{- end }}
{{- if gt (int $worker.autoscaling.minReplicas) (int $worker.autoscaling.maxReplicas) }}
{{- fail (printf "worker.autoscaling.minReplicas (%d) exceeds worker.autoscaling.maxReplicas (%d)" (int $worker.autoscaling.minReplicas) (int $worker.autoscaling.maxReplicas)) }}
{{- end }}
{{- if and $.Values.networkPolicy.enabled $worker.webhook.url (not $.Values.networkPolicy.webhook.to) }}
{{- fail "networkPolicy.enabled with worker.webhook.url needs networkPolicy.webhook.to, the peers where the webhook receiver is (an empty list would let the worker pods out to anywhere)" }}
{{- end }}
{{- end }}
{{- if eq (int .Values.metrics.port) (int .Values.server.port) }}
{{- fail (printf "metrics.port (%d) must differ from server.port: metrics are served on a port of their own" (int .Values.metrics.port)) }}
{{- end }}
{{- if gt (int $db.poolMinSize) (int $db.poolMaxSize) }}
{{- fail (printf "database.poolMinSize (%d) exceeds database.poolMaxSize (%d)" (int $db.poolMinSize) (int $db.poolMaxSize)) }}
{{- end }}
{{- $memory := dict }}
{{- range $side := list "requests" "limits" }}
{{- $quantity := index (index $.Values.resources $side) "memory" }}
{{- $_ := set $memory $side (mul (trimSuffix "Gi" (trimSuffix "Mi" $quantity) | int) (ternary 1024 1 (hasSuffix "Gi" $quantity))) }}
{{- end }}
{{- if ne $memory.requests $memory.limits }}
{{- fail (printf "resources.requests.memory (%dMi) must equal resources.limits.memory (%dMi): Guaranteed QoS, memory that cannot be overcommitted" $memory.requests $memory.limits) }}
{{- end }}
{{- if lt $memory.limits 256 }}
{{- fail (printf "resources.limits.memory (%dMi) is below 256Mi, the chart's floor; make capacity sizes it from the load test's peak RSS (docs/sizing.md)" $memory.limits) }}
{{- end }}
{{- $drain := add (int .Values.shutdown.preStopSleepSeconds) (int .Values.server.timeoutGracefulShutdown) 10 }}
{{- if le (int .Values.shutdown.terminationGracePeriodSeconds) $drain }}
{{- fail (printf "shutdown.terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds + server.timeoutGracefulShutdown + 10 s to close the database connections = %d" (int .Values.shutdown.terminationGracePeriodSeconds) $drain) }}
{{- end }}
{{- end }}

{{/* Pod and container security shared by the Deployment and the migration Job. */}}
{{- define "app.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "app.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{- define "app.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "app.databaseSecret" . }}
      key: {{ .Values.database.existingSecretKey }}
{{- end }}

{{/*
The service's authentication settings; `auth` is in values.yaml of auth=api_key and auth=jwt bakes
only. API_KEY_HASHES comes from its Secret like DATABASE_URL (as a file with secrets.asFiles); the
JWT settings are plain values.
*/}}
{{- define "app.authEnv" -}}
{{- $auth := .Values.auth | default dict }}
{{- if and $auth.apiKey (not .Values.secrets.asFiles) }}
- name: API_KEY_HASHES
  valueFrom:
    secretKeyRef:
      name: {{ include "app.apiKeySecret" . }}
      key: {{ $auth.apiKey.existingSecretKey }}
{{- end }}
{{- with $auth.jwt }}
- name: JWT_ISSUER
  value: {{ .issuer | quote }}
- name: JWT_AUDIENCE
  value: {{ .audience | quote }}
- name: JWT_JWKS_URL
  value: {{ .jwksUrl | quote }}
{{- with .readScope }}
- name: JWT_READ_SCOPE
  value: {{ . | quote }}
{{- end }}
{{- with .writeScope }}
- name: JWT_WRITE_SCOPE
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The port the pods fetch the JWKS on: the one in auth.jwt.jwksUrl, else 443 (https). */}}
{{- define "app.jwksPort" -}}
{{- regexFind ":[0-9]+$" (urlParse .Values.auth.jwt.jwksUrl).host | trimPrefix ":" | default "443" }}
{{- end }}

{{/*
The port the worker delivers events on: the one in worker.webhook.url, else the scheme's (80 for
http, 443 for https), as app.jwksPort reads auth.jwt.jwksUrl.
*/}}
{{- define "app.webhookPort" -}}
{{- $url := urlParse .Values.worker.webhook.url }}
{{- regexFind ":[0-9]+$" $url.host | trimPrefix ":" | default (ternary "80" "443" (eq $url.scheme "http")) }}
{{- end }}

{{/* NetworkPolicy egress: PostgreSQL (networkPolicy.database.to) and cluster DNS, nothing else. */}}
{{- define "app.egressToDatabaseAndDns" -}}
{{- $policy := .Values.networkPolicy }}
- to:
    {{- toYaml $policy.database.to | nindent 4 }}
  ports:
    - port: {{ $policy.database.port }}
      protocol: TCP
- to:
    - namespaceSelector:
        {{- toYaml $policy.dns.namespaceSelector | nindent 8 }}
      podSelector:
        {{- toYaml $policy.dns.podSelector | nindent 8 }}
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end }}

{{/*
The worker (jobs=postgres bakes: `worker` is in their values.yaml only): "true" when it is on,
else empty.
*/}}
{{- define "app.workerEnabled" -}}
{{- if (.Values.worker | default dict).enabled }}true{{ end }}
{{- end }}

{{/* Connections of the worker pods, a rolling update's surge included: one each (the queue's),
at most worker.autoscaling.maxReplicas pods when the queue scales them. */}}
{{- define "app.workerConnections" -}}
{{- if include "app.workerEnabled" . }}
{{- $worker := .Values.worker }}
{{- $pods := ternary $worker.autoscaling.maxReplicas $worker.replicaCount $worker.autoscaling.enabled }}
{{- add (int $pods) (int .Values.strategy.maxSurge) }}
{{- else }}0{{ end }}
{{- end }}

{{/*
The worker's pods: a name of their own, so no selector of the service (Deployment, Service, PDB,
HPA, topology spread, NetworkPolicy) ever matches them, and none of theirs a service pod.
*/}}
{{- define "app.workerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "app.name" . }}-worker
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: worker
{{- end }}

{{- define "app.workerLabels" -}}
{{ include "app.chartLabels" . }}
{{ include "app.workerSelectorLabels" . }}
{{- end }}

{{/*
The events' settings, for the service's pods (they enqueue an event only with WEBHOOK_URL) and the
worker's (they deliver it); nothing when the worker is off or in a bake without jobs. WEBHOOK_SECRET
comes from its Secret like DATABASE_URL (as a file with secrets.asFiles).
*/}}
{{- define "app.jobsEnv" -}}
{{- if include "app.workerEnabled" . }}
{{- $webhook := .Values.worker.webhook }}
- name: WEBHOOK_URL
  value: {{ $webhook.url | quote }}
{{- if and $webhook.existingSecret (not .Values.secrets.asFiles) }}
- name: WEBHOOK_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $webhook.existingSecret }}
      key: {{ $webhook.existingSecretKey }}
{{- end }}
- name: WEBHOOK_TIMEOUT_SECONDS
  value: {{ $webhook.timeoutSeconds | quote }}
- name: WEBHOOK_MAX_ATTEMPTS
  value: {{ $webhook.maxAttempts | quote }}
- name: JOBS_HEARTBEAT_TIMEOUT_SECONDS
  value: {{ .Values.worker.heartbeatTimeoutSeconds | quote }}
{{- end }}
{{- end }}

{{/*
The Secret files of secrets.asFiles (SECRETS_DIR), for the service's and the worker's pods: a file
per secret setting, named after its variable. One Secret is mounted as it is; several (the database
URL with API_KEY_HASHES or WEBHOOK_SECRET) share the one folder through a projected volume.
*/}}
{{- define "app.secretsVolume" -}}
{{- if .Values.secrets.asFiles }}
{{- $files := list (dict "secret" (include "app.databaseSecret" .) "key" .Values.database.existingSecretKey "path" "DATABASE_URL") }}
{{- with (.Values.auth | default dict).apiKey }}
{{- $files = append $files (dict "secret" (include "app.apiKeySecret" $) "key" .existingSecretKey "path" "API_KEY_HASHES") }}
{{- end }}
{{- if include "app.workerEnabled" . }}
{{- with .Values.worker.webhook }}
{{- if .existingSecret }}
{{- $files = append $files (dict "secret" .existingSecret "key" .existingSecretKey "path" "WEBHOOK_SECRET") }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq (len $files) 1 }}
- name: secrets
  secret:
    secretName: {{ (first $files).secret }}
    defaultMode: 0440
    items:
      - key: {{ (first $files).key }}
        path: {{ (first $files).path }}
{{- else }}
- name: secrets
  projected:
    defaultMode: 0440
    sources:
      {{- range $files }}
      - secret:
          name: {{ .secret }}
          items:
            - key: {{ .key }}
              path: {{ .path }}
      {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
topologySpreadConstraints of the pods whose selector labels are `selector`: one per key of
topologySpread.topologyKeys (nodes, then zones), each counting only the pods of the same
ReplicaSet (matchLabelKeys: pod-template-hash), so a rollout's new pods are spread among
themselves rather than around the old ones about to leave. Empty when off.
*/}}
{{- define "app.topologySpread" -}}
{{- $spread := .root.Values.topologySpread }}
{{- if $spread.enabled }}
{{- range $spread.topologyKeys }}
- maxSkew: {{ $spread.maxSkew }}
  topologyKey: {{ . }}
  whenUnsatisfiable: {{ $spread.whenUnsatisfiable }}
  labelSelector:
    matchLabels:
      {{- $.selector | nindent 6 }}
  matchLabelKeys:
    - pod-template-hash
{{- end }}
{{- end }}
{{- end }}
