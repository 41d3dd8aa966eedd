{{/* The name of every scheduler object, at most 63 characters (a DNS label). */}}
{{- define "secondary-scheduler.fullname" -}}
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

{{- define "secondary-scheduler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* What selects the scheduler's pods; never changes across upgrades (selectors are immutable). */}}
{{- define "secondary-scheduler.selector" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "secondary-scheduler.image" -}}
{{- printf "%s:%s" .image.repository (default (printf "v%s" .chart.AppVersion) .image.tag) -}}
{{- end -}}

{{- define "secondary-scheduler.tlsSecret" -}}
{{- default (printf "%s-serving-cert" (include "secondary-scheduler.fullname" .)) .Values.scheduler.tls.secretName -}}
{{- end -}}

{{/* Every plugin a profile names as enabled at any extension point, as a YAML list. */}}
{{- define "secondary-scheduler.enabledPlugins" -}}
{{- $enabled := list -}}
{{- range $point, $set := (.plugins | default dict) -}}
{{- range (($set | default dict).enabled | default list) -}}
{{- $enabled = append $enabled .name -}}
{{- end -}}
{{- end -}}
{{- toYaml (uniq $enabled) -}}
{{- end -}}

{{/*
The rules the profiles need beyond system:kube-scheduler and system:volume-scheduler, as a
YAML list: operator/rbac.py's derivation over values, not over the config text. Every plugin
named as enabled at any extension point brings rbac.pluginRules[plugin]; a Trimaran plugin on
metrics-server brings rbac.metricsServerRules; rbac.schedulerRules (our image's own needs) and
rbac.extraRules are added as they are.
*/}}
{{- define "secondary-scheduler.pluginRules" -}}
{{- $rules := .Values.rbac.schedulerRules | default list -}}
{{- $trimaran := list "TargetLoadPacking" "LoadVariationRiskBalancing" "LowRiskOverCommitment" -}}
{{- range $profile := .Values.scheduler.profiles -}}
{{- range $plugin := include "secondary-scheduler.enabledPlugins" $profile | fromYamlArray -}}
{{- $rules = concat $rules (get $.Values.rbac.pluginRules $plugin | default list) -}}
{{- if has $plugin $trimaran -}}
{{- $args := dict -}}
{{- range ($profile.pluginConfig | default list) -}}
{{- if eq .name $plugin -}}{{- $args = .args | default dict -}}{{- end -}}
{{- end -}}
{{- $provider := $args.metricProvider | default dict -}}
{{- if and (not $args.watcherAddress) (has ($provider.type | default "") (list "" "KubernetesMetricsServer")) -}}
{{- $rules = concat $rules $.Values.rbac.metricsServerRules -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $rules = concat $rules .Values.rbac.extraRules -}}
{{- if $rules -}}
{{- toYaml (uniq $rules) -}}
{{- end -}}
{{- end -}}

{{/* Secrets the metric providers read their token from: {namespace: [name, ...]} as YAML. */}}
{{- define "secondary-scheduler.tokenSecrets" -}}
{{- $secrets := dict -}}
{{- range $profile := .Values.scheduler.profiles -}}
{{- $enabled := include "secondary-scheduler.enabledPlugins" $profile | fromYamlArray -}}
{{- range ($profile.pluginConfig | default list) -}}
{{- if and (has .name $enabled) (has .name (list "TargetLoadPacking" "LoadVariationRiskBalancing" "LowRiskOverCommitment")) -}}
{{- $ref := ((.args | default dict).metricProvider | default dict).tokenSecretRef | default dict -}}
{{- if and $ref.namespace $ref.name -}}
{{- $_ := set $secrets $ref.namespace (uniq (append (get $secrets $ref.namespace | default list) $ref.name) | sortAlpha) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $secrets -}}
{{- end -}}

{{/* The KubeSchedulerConfiguration; leader election comes from the Deployment's flags. */}}
{{- define "secondary-scheduler.config" -}}
{{- $config := dict "apiVersion" "kubescheduler.config.k8s.io/v1" "kind" "KubeSchedulerConfiguration" -}}
{{- $config = merge $config (deepCopy .Values.scheduler.extraConfig) -}}
{{- $_ := set $config "leaderElection" (dict "leaderElect" false) -}}
{{- $_ = set $config "profiles" .Values.scheduler.profiles -}}
{{- toYaml $config -}}
{{- end -}}
