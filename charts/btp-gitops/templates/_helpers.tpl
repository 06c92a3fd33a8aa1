{{/* Names, labels and the pieces both Deployments share. */}}

{{- define "btp-gitops.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "btp-gitops.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "btp-gitops.controllerName" -}}
{{- printf "%s-controller" (include "btp-gitops.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "btp-gitops.subscriptionServerName" -}}
{{- printf "%s-subscription-server" (include "btp-gitops.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "btp-gitops.leaseName" -}}
{{- default (include "btp-gitops.controllerName" .) .Values.controller.leaderElection.leaseName -}}
{{- end -}}

{{- define "btp-gitops.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels; call with (dict "root" $ "component" "controller"). */}}
{{- define "btp-gitops.selectorLabels" -}}
app.kubernetes.io/name: {{ include "btp-gitops.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every label of an object; call with (dict "root" $ "component" "controller"). */}}
{{- define "btp-gitops.labels" -}}
helm.sh/chart: {{ include "btp-gitops.chart" .root }}
{{ include "btp-gitops.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: btp-gitops
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end -}}

{{- define "btp-gitops.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Checks of combinations the schema cannot explain well. */}}
{{- define "btp-gitops.validate" -}}
{{- if and (ne .Values.git.auth "none") (not .Values.git.existingSecret) -}}
{{- fail (printf "git.existingSecret: git.auth is %s, so name the Secret holding the Git credentials (see the chart README)" .Values.git.auth) -}}
{{- end -}}
{{- if and (not .Values.controller.leaderElection.enabled) (gt (int .Values.controller.replicas) 1) -}}
{{- fail "controller.replicas: without leader election (controller.leaderElection.enabled false) run at most one replica, or two would reconcile the same objects at once" -}}
{{- end -}}
{{- if and .Values.subscriptionServer.enabled .Values.subscriptionServer.istio.enabled -}}
{{- if not .Values.subscriptionServer.istio.hosts -}}
{{- fail "subscriptionServer.istio.hosts: name at least one host when subscriptionServer.istio.enabled is true" -}}
{{- end -}}
{{- if and (not .Values.subscriptionServer.istio.gateway.existing) (not .Values.subscriptionServer.istio.gateway.credentialName) -}}
{{- fail "subscriptionServer.istio.gateway.credentialName: the rendered Gateway serves HTTPS and needs the TLS Secret's name (or set gateway.existing)" -}}
{{- end -}}
{{- if .Values.subscriptionServer.tls.existingSecret -}}
{{- fail "subscriptionServer.tls.existingSecret and subscriptionServer.istio.enabled exclude each other: the Istio gateway terminates TLS and sends plain HTTP to the server" -}}
{{- end -}}
{{- end -}}
{{- include "btp-gitops.validateSource" . -}}
{{- end -}}

{{/* What a process needs to start at all: a value it exits on (exit 2 or 5, a crash loop) is
refused here, with the value to set. Checked last, so the checks above name their own values. */}}
{{- define "btp-gitops.validateSource" -}}
{{- $repo := .Values.source.repo -}}
{{- if and .Values.subscriptionServer.enabled (not $repo) -}}
{{- fail "source.repo: the subscription server (subscriptionServer.enabled, on by default) records tenants in the source Git repository and does not start without one. Set source.repo to the repository the generator renders from (and git.auth with git.existingSecret for its credentials, see the chart README), or set subscriptionServer.enabled=false to install the controller alone" -}}
{{- end -}}
{{- if and .Values.controller.prometheusUrl (not $repo) -}}
{{- fail "controller.prometheusUrl: version cleanup commits to the source Git repository and the controller does not start without one. Set source.repo too, or leave controller.prometheusUrl empty" -}}
{{- end -}}
{{- if $repo -}}
{{- $ssh := regexMatch "^ssh://|^[^@\\s/]+@[^:\\s]+:" $repo -}}
{{- $http := regexMatch "^https?://" $repo -}}
{{- $auth := .Values.git.auth -}}
{{- if and $ssh (ne $auth "ssh") -}}
{{- fail (printf "git.auth: source.repo %s is an SSH URL, and SSH needs a key and the server's host keys, which git.auth %s does not give. Set git.auth=ssh and git.existingSecret (a Secret with ssh-privatekey and known_hosts), or use the repository's https URL" $repo $auth) -}}
{{- end -}}
{{- if and (eq $auth "ssh") (not $ssh) -}}
{{- fail (printf "git.auth: ssh credentials are used for SSH URLs only, and source.repo %s is not one. Use the repository's SSH URL (ssh://... or git@host:path), or git.auth=https for an https URL" $repo) -}}
{{- end -}}
{{- if and (eq $auth "https") (not $http) -}}
{{- fail (printf "git.auth: https credentials are used for http(s) URLs only, and source.repo %s is not one. Use the repository's https URL, or git.auth=ssh for an SSH URL" $repo) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Pod-level settings both Deployments share. */}}
{{- define "btp-gitops.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/* Environment of both processes: the Pod's identity, HOME on the writable /tmp, Git credentials. */}}
{{- define "btp-gitops.env" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: HOME
  value: /tmp
{{- if eq .Values.git.auth "ssh" }}
- name: GIT_SSH_COMMAND
  value: ssh -i /etc/btp-gitops/git/ssh-privatekey -o IdentitiesOnly=yes -o UserKnownHostsFile=/etc/btp-gitops/git/known_hosts
{{- else if eq .Values.git.auth "https" }}
- name: GIT_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .Values.git.existingSecret }}
      key: username
- name: GIT_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.git.existingSecret }}
      key: password
- name: GIT_CONFIG_COUNT
  value: "1"
- name: GIT_CONFIG_KEY_0
  value: credential.helper
- name: GIT_CONFIG_VALUE_0
  value: '!f() { echo username=$GIT_USERNAME; echo password=$GIT_PASSWORD; }; f'
{{- end }}
{{- end -}}

{{/* Volumes of both processes: the Git workdir, /tmp, and the SSH key. */}}
{{- define "btp-gitops.volumes" -}}
- name: workdir
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- if eq .Values.git.auth "ssh" }}
- name: git-ssh
  secret:
    secretName: {{ .Values.git.existingSecret }}
    defaultMode: 288 # 0440: readable by the fsGroup, as ssh needs no more
    items:
      - key: ssh-privatekey
        path: ssh-privatekey
      - key: known_hosts
        path: known_hosts
{{- end }}
{{- end -}}

{{- define "btp-gitops.volumeMounts" -}}
- name: workdir
  mountPath: /var/lib/btp-gitops
- name: tmp
  mountPath: /tmp
{{- if eq .Values.git.auth "ssh" }}
- name: git-ssh
  mountPath: /etc/btp-gitops/git
  readOnly: true
{{- end }}
{{- end -}}

{{/* The Git source flags of both processes. */}}
{{- define "btp-gitops.sourceArgs" -}}
{{- if .Values.source.repo }}
- {{ printf "--source-repo=%s" .Values.source.repo | quote }}
- {{ printf "--source-branch=%s" .Values.source.branch | quote }}
{{- end }}
- --workdir=/var/lib/btp-gitops/source
- {{ printf "--git-timeout=%v" .Values.source.gitTimeout | quote }}
- {{ printf "--git-probe-interval=%v" .Values.source.gitProbeInterval | quote }}
{{- end -}}
