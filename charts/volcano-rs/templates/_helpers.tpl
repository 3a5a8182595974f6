{{/*
Chart name, overridable with nameOverride. Kubernetes names are limited to 63 characters.
*/}}
{{- define "volcano-rs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name prefix of every object: <release>-<chart>, or the release name alone when it already
contains the chart name (so `helm install volcano-rs` gives "volcano-rs", not
"volcano-rs-volcano-rs").
*/}}
{{- define "volcano-rs.fullname" -}}
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

{{/*
Chart label value: name-version, "+" replaced as label values do not allow it.
*/}}
{{- define "volcano-rs.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "volcano-rs.labels" -}}
helm.sh/chart: {{ include "volcano-rs.chart" . }}
{{ include "volcano-rs.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/part-of: volcano-rs
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Selector labels: immutable in a Deployment, so only name and instance.
*/}}
{{- define "volcano-rs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "volcano-rs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Name of the ServiceAccount the scheduler runs as.
*/}}
{{- define "volcano-rs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "volcano-rs.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Image reference: repository, then the digest when given, else the tag (default: appVersion).
*/}}
{{- define "volcano-rs.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The scheduler configuration: values.schedulerConfig, or Volcano's chart default.
*/}}
{{- define "volcano-rs.schedulerConfig" -}}
{{- if .Values.schedulerConfig }}
{{- .Values.schedulerConfig }}
{{- else }}
{{- .Files.Get "files/volcano-scheduler.conf" }}
{{- end }}
{{- end }}
