{{/*
Naming and labelling helpers shared by every template.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "tidal.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release-qualified name used for every object. Truncated to 63 characters (DNS label limit);
the release name alone when it already contains the chart name.
*/}}
{{- define "tidal.fullname" -}}
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

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "tidal.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the pods: stable across upgrades, never add to these. */}}
{{- define "tidal.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tidal.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The full label set for every object. */}}
{{- define "tidal.labels" -}}
helm.sh/chart: {{ include "tidal.chart" . }}
{{ include "tidal.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: tidal
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the pod runs as. */}}
{{- define "tidal.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tidal.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference; the tag defaults to the chart's appVersion. */}}
{{- define "tidal.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* Name of the ConfigMap the schedules are mounted from (ours, or the user's). */}}
{{- define "tidal.schedulesConfigMapName" -}}
{{- if .Values.schedules.existingConfigMap.name }}
{{- .Values.schedules.existingConfigMap.name }}
{{- else }}
{{- printf "%s-schedules" (include "tidal.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Every schedule file the chart renders, as JSON: a map from the path relative to the schedules
directory (e.g. "team-a.yaml", "policies/team-a-day.yaml") to the file's text. Sources: the
chart's own schedules/ directory (when schedules.includeChartFiles) and schedules.files
(a value wins over a chart file of the same path). Callers use `include ... | fromJson`:
JSON keeps every byte, where toYaml would drop the last file's final newline.
*/}}
{{- define "tidal.scheduleFiles" -}}
{{- $files := dict }}
{{- if .Values.schedules.includeChartFiles }}
{{- range $path, $_ := .Files.Glob "schedules/**.{yaml,yml}" }}
{{- $_ := set $files (trimPrefix "schedules/" $path) ($.Files.Get $path) }}
{{- end }}
{{- end }}
{{- range $path, $content := .Values.schedules.files }}
{{- if kindIs "string" $content }}
{{- $_ := set $files $path $content }}
{{- else }}
{{- $_ := set $files $path (printf "%s\n" (toYaml $content)) }}
{{- end }}
{{- end }}
{{- toJson $files }}
{{- end }}

{{/*
ConfigMap keys cannot hold "/": a file in a sub-directory is stored under its path with "/"
replaced by "__" and mapped back to its path by the volume's items.
*/}}
{{- define "tidal.scheduleKey" -}}
{{- $key := replace "/" "__" . }}
{{- if not (regexMatch "^[-._a-zA-Z0-9]+$" $key) }}
{{- fail (printf "schedules: file %q cannot be a ConfigMap key; use only letters, digits, '-', '_', '.' and '/' in schedule file paths" .) }}
{{- end }}
{{- $key }}
{{- end }}

{{/* The estimator's pods: their own name label, so that no selector of the daemon's (its
Deployment, Service, PodDisruptionBudget, NetworkPolicy) takes them in. */}}
{{- define "tidal.estimatorSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-estimator" (include "tidal.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: estimator
{{- end }}

{{- define "tidal.estimatorName" -}}
{{- printf "%s-estimator" (include "tidal.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret holding the command API's bearer token (an existing one, or the chart's). */}}
{{- define "tidal.commandTokenSecret" -}}
{{- .Values.commandApi.token.existingSecret | default (printf "%s-command-token" (include "tidal.fullname" .)) -}}
{{- end -}}
