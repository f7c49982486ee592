{{/* The chart's name, shortened to a DNS label. */}}
{{- define "redstate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's resource name. */}}
{{- define "redstate.fullname" -}}
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

{{- define "redstate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "redstate.labels" -}}
helm.sh/chart: {{ include "redstate.chart" . }}
{{ include "redstate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "redstate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "redstate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "redstate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "redstate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The port of config.server.addr: the container port, the probes' and the Service's target. */}}
{{- define "redstate.port" -}}
{{- $addr := required "config.server.addr is required (host:port)" .Values.config.server.addr }}
{{- $port := splitList ":" $addr | last }}
{{- if not (regexMatch "^[0-9]+$" $port) }}
{{- fail (printf "config.server.addr %q has no numeric port" $addr) }}
{{- end }}
{{- if eq $port "0" }}
{{- fail "config.server.addr needs a fixed port in Kubernetes, not 0" }}
{{- end }}
{{- $port }}
{{- end }}

{{/* The Secret holding REDSTATE_AUTH_TOKENS. */}}
{{- define "redstate.authSecretName" -}}
{{- default (include "redstate.fullname" .) .Values.auth.existingSecret }}
{{- end }}

{{/* Whether the SQL truth is a shared database rather than SQLite in the pod. */}}
{{- define "redstate.sharedDatabase" -}}
{{- if or .Values.database.existingSecret (and .Values.config.database .Values.config.database.url) }}true{{ end }}
{{- end }}
