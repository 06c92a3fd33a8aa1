{{/*
Chart name (fixed; resource names are not derived from the release name).
*/}}
{{- define "sap-btp-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Chart label value: name-version.
*/}}
{{- define "sap-btp-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Selector labels. Immutable on the Deployment: never add version/chart here.
*/}}
{{- define "sap-btp-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sap-btp-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
Common labels. Deterministic: no release revision, no timestamps.
*/}}
{{- define "sap-btp-operator.labels" -}}
{{ include "sap-btp-operator.selectorLabels" . }}
helm.sh/chart: {{ include "sap-btp-operator.chart" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sap-btp-operator
{{- end -}}

{{/*
Namespace holding the Service Manager access-credentials Secret.
*/}}
{{- define "sap-btp-operator.credentialsNamespace" -}}
{{- default .Release.Namespace .Values.manager.credentialsNamespace -}}
{{- end -}}

{{/*
Fixed resource names.
*/}}
{{- define "sap-btp-operator.serviceAccountName" -}}sap-btp-operator-controller-manager{{- end -}}
{{- define "sap-btp-operator.configMapName" -}}sap-btp-operator-config{{- end -}}
{{- define "sap-btp-operator.secretName" -}}sap-btp-service-operator{{- end -}}
{{- define "sap-btp-operator.webhookServiceName" -}}sap-btp-operator-webhook-service{{- end -}}
{{- define "sap-btp-operator.webhookCertSecretName" -}}webhook-server-cert{{- end -}}
{{- define "sap-btp-operator.mutatingWebhookName" -}}sap-btp-operator-mutating-webhook-configuration{{- end -}}
{{- define "sap-btp-operator.validatingWebhookName" -}}sap-btp-operator-validating-webhook-configuration{{- end -}}
{{- define "sap-btp-operator.servingCertName" -}}sap-btp-operator-serving-cert{{- end -}}

{{/*
Annotations for webhook configurations (CA injection in certManager mode).
Renders nothing in external mode.
*/}}
{{- define "sap-btp-operator.webhookAnnotations" -}}
{{- if eq .Values.certificates.mode "certManager" -}}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "sap-btp-operator.servingCertName" .) }}
{{- end -}}
{{- end -}}

{{/*
Pre-delete hook image: accepts a string or {repository, tag}.
*/}}
{{- define "sap-btp-operator.preDeleteImage" -}}
{{- $img := .Values.preDeleteHook.image -}}
{{- if kindIs "string" $img -}}
{{- $img -}}
{{- else if $img.tag -}}
{{- printf "%s:%s" $img.repository $img.tag -}}
{{- else -}}
{{- $img.repository -}}
{{- end -}}
{{- end -}}

{{- define "sap-btp-operator.preDeleteImagePullPolicy" -}}
{{- $img := .Values.preDeleteHook.image -}}
{{- if and (kindIs "map" $img) $img.pullPolicy -}}
{{- $img.pullPolicy -}}
{{- else -}}
{{- .Values.preDeleteHook.imagePullPolicy | default "IfNotPresent" -}}
{{- end -}}
{{- end -}}
