{{/* Prefix of every object name: "blueprint-operator" for a release of that name. */}}
{{- define "bpo.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels of a component (the same as manifests/): dict "component" "controller" */}}
{{- define "bpo.selector" -}}
app.kubernetes.io/name: blueprint-operator
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of every object: selector labels plus Helm's. Args: dict "ctx" $ "component" "x" */}}
{{- define "bpo.labels" -}}
{{ include "bpo.selector" . }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version }}
{{- end -}}

{{- define "bpo.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "bpo.webhookService" -}}
{{ include "bpo.fullname" . }}-webhook
{{- end -}}

{{- define "bpo.webhookSecret" -}}
{{- if eq .Values.webhook.certificates.mode "secret" -}}
{{- required "webhook.certificates.secretName is required with mode secret" .Values.webhook.certificates.secretName -}}
{{- else -}}
{{ include "bpo.fullname" . }}-webhook-tls
{{- end -}}
{{- end -}}

{{- define "bpo.checkValues" -}}
{{- $mode := .Values.webhook.certificates.mode -}}
{{- if not (has $mode (list "generate" "cert-manager" "secret")) -}}
{{- fail (printf "webhook.certificates.mode %q: write generate, cert-manager or secret" $mode) -}}
{{- end -}}
{{- if not (has .Values.webhook.failurePolicy (list "Fail" "Ignore")) -}}
{{- fail (printf "webhook.failurePolicy %q: write Fail or Ignore" .Values.webhook.failurePolicy) -}}
{{- end -}}
{{- if and (not .Values.controller.leaderElection.enabled) (gt (int .Values.controller.replicas) 1) -}}
{{- fail "controller.leaderElection.enabled=false runs without a Lease: set controller.replicas to 1 (several replicas would run the same ActionSets)" -}}
{{- end -}}
{{- end -}}

{{/* The namespaces the controller runs whole (watchNamespace, runNamespaces), comma-separated;
     the webhook claims every ActionSet created there. Empty when there are none. */}}
{{- define "bpo.runNamespaces" -}}
{{- $c := .Values.controller -}}
{{- $all := concat (list $c.watchNamespace) ($c.runNamespaces | default list) | compact | uniq -}}
{{- join "," $all -}}
{{- end -}}
