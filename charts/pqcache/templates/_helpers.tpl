{{/* The chart's name, or nameOverride. */}}
{{- define "pqcache.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, used for cluster-wide objects too. */}}
{{- define "pqcache.fullname" -}}
{{- if contains (include "pqcache.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "pqcache.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "pqcache.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "pqcache.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pqcache.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pqcache.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "pqcache.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pqcache.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pqcache.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "pqcache.workerImage" -}}
{{- printf "%s:%s" (default .Values.image.repository .Values.worker.image.repository) (default (default .Chart.AppVersion .Values.image.tag) .Values.worker.image.tag) }}
{{- end }}

{{- define "pqcache.polarsImage" -}}
{{- printf "%s:%s" .Values.polars.image.repository (default .Chart.AppVersion .Values.polars.image.tag) }}
{{- end }}

{{- define "pqcache.sparkImage" -}}
{{- printf "%s:%s" .Values.spark.image.repository (default .Chart.AppVersion .Values.spark.image.tag) }}
{{- end }}

{{/* The locality webhook runs with the node agent: without copies on nodes it has nothing to place. */}}
{{- define "pqcache.localityWebhook" -}}
{{- if and .Values.agent.enabled .Values.locality.webhook.enabled }}true{{ end }}
{{- end }}
