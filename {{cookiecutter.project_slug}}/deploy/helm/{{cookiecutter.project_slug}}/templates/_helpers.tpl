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
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "app.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "app.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "app.databaseSecret" -}}
{{- default (printf "%s-database" (include "app.fullname" .)) .Values.database.existingSecret }}
{{- end }}

{{/*
Checks that a JSON schema cannot express, because they compare two values.
  connections: (max replicas + maxSurge) x poolMaxSize + 1 migration connection must fit in
               maxConnections - reservedConnections;
  pool:        poolMinSize <= poolMaxSize;
  shutdown:    terminationGracePeriodSeconds > preStop sleep + drain + 10 s of pool close
               (the service's Database.close bound).
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
{{- $needed := add (mul $pods (int $db.poolMaxSize)) 1 }}
{{- $budget := sub (int $db.maxConnections) (int $db.reservedConnections) }}
{{- if gt $needed $budget }}
{{- fail (printf "database pools need %d connections ((%d pods incl. surge) x poolMaxSize %d + 1 migration) but the database allows %d (maxConnections %d - reservedConnections %d): lower database.poolMaxSize or the replica ceiling, or put PgBouncer in front" $needed $pods (int $db.poolMaxSize) $budget (int $db.maxConnections) (int $db.reservedConnections)) }}
{{- end }}
{{- if gt (int $db.poolMinSize) (int $db.poolMaxSize) }}
{{- fail (printf "database.poolMinSize (%d) exceeds database.poolMaxSize (%d)" (int $db.poolMinSize) (int $db.poolMaxSize)) }}
{{- end }}
{{- $drain := add (int .Values.shutdown.preStopSleepSeconds) (int .Values.server.timeoutGracefulShutdown) 10 }}
{{- if le (int .Values.shutdown.terminationGracePeriodSeconds) $drain }}
{{- fail (printf "shutdown.terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds + server.timeoutGracefulShutdown + 10 s pool close = %d" (int .Values.shutdown.terminationGracePeriodSeconds) $drain) }}
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
