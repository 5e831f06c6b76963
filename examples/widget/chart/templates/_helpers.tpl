{{/*
Names. Kubernetes names and label values are at most 63 characters.
*/}}
{{- define "metahook.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: fullnameOverride, else the release name when it already contains
the chart name (so `helm install metahook .` names everything `metahook`), else
"<release>-<chart>".
*/}}
{{- define "metahook.fullname" -}}
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

{{- define "metahook.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "metahook.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "metahook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "metahook.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels on every object: the selector labels, the chart's, then commonLabels
(which cannot override the selector labels).
*/}}
{{- define "metahook.labels" -}}
{{- $labels := dict
  "helm.sh/chart" (include "metahook.chart" .)
  "app.kubernetes.io/version" (.Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-")
  "app.kubernetes.io/managed-by" .Release.Service
  "app.kubernetes.io/part-of" "metahook"
}}
{{- $labels = merge (include "metahook.selectorLabels" . | fromYaml) $labels .Values.commonLabels }}
{{- toYaml $labels }}
{{- end }}

{{/*
metadata.labels and, when set, metadata.annotations for an object; the
argument is a list: the root context, then extra annotations (a dict).
*/}}
{{- define "metahook.metadata" -}}
{{- $ := index . 0 }}
{{- $annotations := merge (dict) (index . 1) $.Values.commonAnnotations -}}
labels:
  {{- include "metahook.labels" $ | nindent 2 }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "metahook.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "metahook.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "metahook.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{- define "metahook.leaseName" -}}
{{- default (include "metahook.fullname" .) .Values.driver.leaseName }}
{{- end }}

{{/*
The driver's shards, as a YAML list: driver.shards in driver mode (each a
name and a label selector), else one unsharded entry ({}). The aggregated API
serves one driver's records: it is refused with shards.
*/}}
{{- define "metahook.shards" -}}
{{- $shards := list -}}
{{- if and (eq .Values.mode "driver") .Values.driver.shards -}}
{{- if .Values.driver.aggregatedApi.enabled -}}
{{- fail "driver.shards: the aggregated API (driver.aggregatedApi.enabled) shows one driver's records; it cannot be used with shards" -}}
{{- end -}}
{{- $names := dict -}}
{{- range .Values.driver.shards -}}
{{- if hasKey $names .name -}}
{{- fail (printf "driver.shards: the name %q is used twice" .name) -}}
{{- end -}}
{{- $_ := set $names .name true -}}
{{- $shards = append $shards (dict "name" .name "selector" .selector) -}}
{{- end -}}
{{- else -}}
{{- $shards = list (dict) -}}
{{- end -}}
{{- toYaml $shards -}}
{{- end }}

{{/*
A shard's Lease: the release's Lease name, suffixed with the shard's name
within 63 characters. Called with (list $ shard).
*/}}
{{- define "metahook.shardLeaseName" -}}
{{- $root := index . 0 -}}
{{- $shard := index . 1 -}}
{{- if $shard.name -}}
{{- include "metahook.withShard" (list (include "metahook.leaseName" $root) $shard.name) -}}
{{- else -}}
{{- include "metahook.leaseName" $root -}}
{{- end -}}
{{- end }}

{{/*
"<name>-<shard>" within 63 characters: `name` trimmed to make room for the
shard's, which tells the shards apart. Called with (list name shardName).
*/}}
{{- define "metahook.withShard" -}}
{{- $name := index . 0 -}}
{{- $shard := index . 1 -}}
{{- printf "%s-%s" ($name | trunc (int (sub 62 (len $shard))) | trimSuffix "-") $shard -}}
{{- end }}

{{/*
A shard's Deployment: the release's full name, suffixed with the shard's
name within 63 characters. Called with (list $ shard).
*/}}
{{- define "metahook.shardDeploymentName" -}}
{{- $root := index . 0 -}}
{{- $shard := index . 1 -}}
{{- if $shard.name -}}
{{- include "metahook.withShard" (list (include "metahook.fullname" $root) $shard.name) -}}
{{- else -}}
{{- include "metahook.fullname" $root -}}
{{- end -}}
{{- end }}

{{/*
A shard's ServiceAccount: with serviceAccount.create, one per shard
(<serviceAccountName>-<name>, within 63 characters), so that the API
server's audit log and RBAC tell the shards apart; otherwise, and unsharded,
the release's. Called with (list $ shard).
*/}}
{{- define "metahook.shardServiceAccountName" -}}
{{- $root := index . 0 -}}
{{- $shard := index . 1 -}}
{{- $name := include "metahook.serviceAccountName" $root -}}
{{- if and $shard.name $root.Values.serviceAccount.create -}}
{{- include "metahook.withShard" (list $name $shard.name) -}}
{{- else -}}
{{- $name -}}
{{- end -}}
{{- end }}

{{/*
The driver's ServiceAccounts, one per shard (or the one), as a YAML list of
names without repeats: what the chart creates and binds.
*/}}
{{- define "metahook.serviceAccountNames" -}}
{{- $names := list -}}
{{- range $shard := include "metahook.shards" . | fromYamlArray -}}
{{- $names = append $names (include "metahook.shardServiceAccountName" (list $ $shard)) -}}
{{- end -}}
{{- toYaml ($names | uniq) -}}
{{- end }}

{{/*
The CompositeControllers of the enabled controllers, read from
metacontroller/*.yaml (the single source of truth), as a YAML list. Fails when a
manifest has no controllers.<name> switch in the values, and when no controller
is enabled.
*/}}
{{- define "metahook.enabledControllers" -}}
{{- $enabled := list }}
{{- range $path, $_ := .Files.Glob "metacontroller/*.yaml" }}
{{- $cc := $.Files.Get $path | fromYaml }}
{{- if not (and $cc.metadata $cc.metadata.name $cc.spec) }}
{{- fail (printf "%s is not a CompositeController with metadata.name and spec" $path) }}
{{- end }}
{{- $switch := index $.Values.controllers $cc.metadata.name }}
{{- if not $switch }}
{{- fail (printf "%s defines controller %q but values have no controllers.%s.enabled" $path $cc.metadata.name $cc.metadata.name) }}
{{- end }}
{{- if $switch.enabled }}
{{- $enabled = append $enabled $cc }}
{{- end }}
{{- end }}
{{- if not $enabled }}
{{- fail "no controller is enabled: set controllers.<name>.enabled=true for at least one of them" }}
{{- end }}
{{- toYaml $enabled }}
{{- end }}

{{/*
Driver mode: the enabled controllers' manifests as ConfigMap data, one
"<name>.yaml" key per controller holding metacontroller/<file>.yaml as checked
in (the files the binary embeds, so the driver reads the same manifests it
would with no --controllers). The driver reads them with
METAHOOK_CONTROLLERS=<dir>. Validated (switches, at least one enabled) by
metahook.enabledControllers.
*/}}
{{- define "metahook.controllerFiles" -}}
{{- $_ := include "metahook.enabledControllers" . }}
{{- $files := dict }}
{{- range $path, $_ := .Files.Glob "metacontroller/*.yaml" }}
{{- $cc := $.Files.Get $path | fromYaml }}
{{- if (index $.Values.controllers $cc.metadata.name).enabled }}
{{- $_ := set $files (printf "%s.yaml" $cc.metadata.name) ($.Files.Get $path) }}
{{- end }}
{{- end }}
{{- toYaml $files }}
{{- end }}

{{/*
The ConfigMap holding them, and where the pod mounts it.
*/}}
{{- define "metahook.controllersConfigMapName" -}}
{{- printf "%s-controllers" (include "metahook.fullname" . | trunc 51 | trimSuffix "-") }}
{{- end }}

{{- define "metahook.controllersDir" -}}
/etc/metahook/controllers
{{- end }}

{{/*
The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> "").
*/}}
{{- define "metahook.apiGroup" -}}
{{- if contains "/" . }}{{ index (splitList "/" .) 0 }}{{ end }}
{{- end }}

{{/*
The names of a list of CompositeControllers, comma-separated.
*/}}
{{- define "metahook.controllerNames" -}}
{{- $names := list }}
{{- range . }}
{{- $names = append $names .metadata.name }}
{{- end }}
{{- join "," $names }}
{{- end }}

{{/*
The leader-election Role and RoleBinding: the full name with a suffix, still
within 63 characters.
*/}}
{{- define "metahook.leaderElectionName" -}}
{{- printf "%s-leader-election" (include "metahook.fullname" . | trunc 47 | trimSuffix "-") }}
{{- end }}

{{/*
Pods to run: .Values.replicas, or the mode's default when it is null (2 hook
servers behind Metacontroller; 1 driver, since a standby driver is never
Ready and would keep `helm --wait` from finishing).
*/}}
{{- define "metahook.replicas" -}}
{{- if kindIs "invalid" .Values.replicas -}}
{{- ternary 1 2 (eq .Values.mode "driver") -}}
{{- else -}}
{{- .Values.replicas | int -}}
{{- end -}}
{{- end }}

{{/*
METAHOOK_MAX_BUFFERED_BYTES: .Values.server.maxBufferedBytes, or, when it is
null, half of resources.limits.memory (the other half is for the process, the
connections' buffers and the hooks' decoding; see values.yaml). Empty when
neither is set: the binary's default (128 MiB) applies.
*/}}
{{- define "metahook.maxBufferedBytes" -}}
{{- $explicit := .Values.server.maxBufferedBytes -}}
{{- $limit := dig "limits" "memory" nil (.Values.resources | default dict) -}}
{{- if not (kindIs "invalid" $explicit) -}}
{{- $explicit | int64 -}}
{{- else if kindIs "string" $limit -}}
{{- $number := regexFind "^\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" $limit -}}
{{- $suffix := trimPrefix $number $limit -}}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- if not (and $number (hasKey $units $suffix)) -}}
{{- fail (printf "resources.limits.memory %q: the chart derives server.maxBufferedBytes from k, M, G, T, Ki, Mi, Gi or Ti; set server.maxBufferedBytes (bytes) instead" $limit) -}}
{{- end -}}
{{- divf (mulf (trimPrefix "+" $number | float64) (get $units $suffix)) 2 | int64 -}}
{{- else if not (kindIs "invalid" $limit) -}}
{{- divf $limit 2 | int64 -}}
{{- end -}}
{{- end }}

{{/*
The driver's aggregated API: "true" when it is rendered (driver mode and
driver.aggregatedApi.enabled), else empty. Metacontroller mode ignores the
switch, as it ignores every driver.* value.
*/}}
{{- define "metahook.aggregatedApi" -}}
{{- if and (eq .Values.mode "driver") .Values.driver.aggregatedApi.enabled }}true{{ end }}
{{- end }}

{{/*
Its names, within 63 characters. The Secret holding the serving certificate
is also the cert-manager Certificate's name and secretName.
*/}}
{{- define "metahook.apiTlsSecretName" -}}
{{- printf "%s-api-tls" (include "metahook.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{- define "metahook.apiIssuerName" -}}
{{- printf "%s-api-selfsigned" (include "metahook.fullname" . | trunc 48 | trimSuffix "-") }}
{{- end }}

{{- define "metahook.apiTlsDir" -}}
/etc/metahook/api-tls
{{- end }}

{{/*
The names kube-apiserver may verify the serving certificate against: it dials
the APIService's Service as <service>.<namespace>.svc. As a YAML list.
*/}}
{{- define "metahook.apiDnsNames" -}}
{{- $service := printf "%s.%s.svc" (include "metahook.fullname" .) (include "metahook.namespace" .) }}
{{- toYaml (list $service (printf "%s.cluster.local" $service)) }}
{{- end }}

{{/*
host:port for a listen address; an IPv6 host is bracketed. The argument is a
list: host, port.
*/}}
{{- define "metahook.listenAddress" -}}
{{- $host := index . 0 }}
{{- printf "%s:%d" (ternary (printf "[%s]" $host) $host (contains ":" $host)) (index . 1 | int) }}
{{- end }}

{{/*
The hook service over HTTPS (hooks.tls): its Secrets and where the pod
mounts the serving one. <fullname>-hooks-tls holds tls.crt, tls.key and
ca.crt (the CA that signed it, and with clientAuth the CA client
certificates must chain to); <fullname>-hooks-client-tls holds the client
certificate the CompositeControllers give Metacontroller (clientTLS).
*/}}
{{- define "metahook.hooksTlsSecretName" -}}
{{- printf "%s-hooks-tls" (include "metahook.fullname" . | trunc 53 | trimSuffix "-") }}
{{- end }}

{{- define "metahook.hooksClientTlsSecretName" -}}
{{- printf "%s-hooks-client-tls" (include "metahook.fullname" . | trunc 46 | trimSuffix "-") }}
{{- end }}

{{- define "metahook.hooksTlsDir" -}}
/etc/metahook/hooks-tls
{{- end }}

{{/*
The names a hook caller may dial the Service by: Metacontroller builds
<service>.<namespace> (no .svc) from a webhook's service; other clients use
the .svc forms. As a YAML list.
*/}}
{{- define "metahook.hooksDnsNames" -}}
{{- $base := printf "%s.%s" (include "metahook.fullname" .) (include "metahook.namespace" .) }}
{{- toYaml (list $base (printf "%s.svc" $base) (printf "%s.svc.cluster.local" $base)) }}
{{- end }}

{{/*
hooks.tls without cert-manager: the CA, the serving pair and (with
clientAuth) the client pair, base64, as YAML: keys ca.crt, tls.crt, tls.key,
client.crt, client.key. Reused from the existing Secrets when they hold
everything needed (so an upgrade changes nothing), else all generated anew.
Generated once per render and kept in .Values (shared by every template of a
render): the Secrets and the CompositeControllers' caBundle must come from
the same CA.
*/}}
{{- define "metahook.hooksTlsData" -}}
{{- $tls := .Values.hooks.tls }}
{{- if not (hasKey $tls "_rendered") }}
{{- $namespace := include "metahook.namespace" . }}
{{- $serving := get (lookup "v1" "Secret" $namespace (include "metahook.hooksTlsSecretName" .) | default dict) "data" | default dict }}
{{- $client := get (lookup "v1" "Secret" $namespace (include "metahook.hooksClientTlsSecretName" .) | default dict) "data" | default dict }}
{{- $data := dict }}
{{- $complete := and (get $serving "ca.crt") (get $serving "tls.crt") (get $serving "tls.key") }}
{{- if $tls.clientAuth }}
{{- $complete = and $complete (get $client "tls.crt") (get $client "tls.key") (eq (get $client "ca.crt" | default "") (get $serving "ca.crt" | default "-")) }}
{{- end }}
{{- if $complete }}
{{- $data = dict "ca.crt" (get $serving "ca.crt") "tls.crt" (get $serving "tls.crt") "tls.key" (get $serving "tls.key") "client.crt" (get $client "tls.crt" | default "") "client.key" (get $client "tls.key" | default "") }}
{{- else }}
{{- $days := $tls.certValidityDays | int }}
{{- $dnsNames := include "metahook.hooksDnsNames" . | fromYamlArray }}
{{- $ca := genCA (printf "%s-hooks-ca" (include "metahook.fullname" .) | trunc 64) $days }}
{{- $cert := genSignedCert (first $dnsNames) nil $dnsNames $days $ca }}
{{- $data = dict "ca.crt" ($ca.Cert | b64enc) "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) "client.crt" "" "client.key" "" }}
{{- if $tls.clientAuth }}
{{- $clientCert := genSignedCert "metacontroller" nil nil $days $ca }}
{{- $_ := set $data "client.crt" ($clientCert.Cert | b64enc) }}
{{- $_ := set $data "client.key" ($clientCert.Key | b64enc) }}
{{- end }}
{{- end }}
{{- $_ := set $tls "_rendered" $data }}
{{- end }}
{{- toYaml $tls._rendered }}
{{- end }}
