{{/*
The six services and what each depends on. The only place that knows the topology: every
template below loops over it, so what the services have in common is written once.
  name   Kubernetes and telemetry name (service.name)
  calls  backends it calls over HTTP (values keys)
  uses   cosmosDb | serviceBus | redis
  public whether clients outside the release call it (it then validates their bearer tokens)
*/}}
{{- define "dd.topology" -}}
gateway: { name: gateway, calls: [delivery, package, droneScheduler], uses: [], public: true }
ingestion: { name: ingestion, calls: [delivery], uses: [serviceBus], public: true }
workflow: { name: workflow, calls: [delivery, package, droneScheduler], uses: [serviceBus], public: false }
delivery: { name: delivery, calls: [], uses: [redis], public: false }
package: { name: package, calls: [], uses: [cosmosDb], public: false }
droneScheduler: { name: dronescheduler, calls: [], uses: [cosmosDb], public: false }
{{- end -}}

{{- define "dd.chart" -}}
{{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels of every object. Argument: dict "root" $ "name" <name> "component" <component>. */}}
{{- define "dd.labels" -}}
{{ include "dd.selectorLabels" . }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: dronedelivery
app.kubernetes.io/version: {{ .root.Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "dd.chart" .root }}
{{- end -}}

{{- define "dd.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/* Selects the load driver's test Jobs' pods (NetworkPolicies). */}}
{{- define "dd.loadTestSelector" -}}
app.kubernetes.io/component: load-test
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selects every pod of the release (NetworkPolicies). */}}
{{- define "dd.releaseSelector" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: dronedelivery
{{- end -}}

{{/* An image of ours. Argument: dict "root" $ "repository" <name>. */}}
{{- define "dd.image" -}}
{{- $image := .root.Values.image -}}
{{- $repository := printf "%s/%s" $image.repositoryPrefix .repository -}}
{{- if $image.registry -}}
{{- $repository = printf "%s/%s" $image.registry $repository -}}
{{- end -}}
{{ printf "%s:%s" $repository $image.tag }}
{{- end -}}

{{/*
A service's pod configuration: serviceDefaults overridden by the service's own keys.
Argument: dict "root" $ "key" <values key>. Returns YAML; use with fromYaml.
*/}}
{{- define "dd.serviceConfig" -}}
{{- $own := omit (index .root.Values .key) "settings" "replicas" "keda" -}}
{{- toYaml (mergeOverwrite (deepCopy .root.Values.serviceDefaults) (deepCopy $own)) -}}
{{- end -}}

{{/*
A value as an environment variable's text. YAML numbers arrive as float64; whole numbers are
printed without an exponent (1048576, not 1.048576e+06).
*/}}
{{- define "dd.scalar" -}}
{{- if kindIs "float64" . -}}
{{- if eq . (float64 (int64 .)) -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else -}}
{{ . }}
{{- end -}}
{{- end -}}

{{/*
A settings tree as environment variables: nested keys joined with "__" (the ASP.NET Core
environment-variable form of Section:Sub:Key). Null leaves are documented in values but not set.
Argument: dict "prefix" "" "tree" <map>.
*/}}
{{- define "dd.settingsEnv" -}}
{{- $prefix := .prefix -}}
{{- range $key, $value := .tree }}
{{- $name := $key -}}
{{- if $prefix }}{{ $name = printf "%s__%s" $prefix $key }}{{ end -}}
{{- if kindIs "map" $value }}
{{- include "dd.settingsEnv" (dict "prefix" $name "tree" $value) }}
{{- else if kindIs "slice" $value }}
{{- /* A list: one variable per item, Section__Key__0, Section__Key__1, ... (ASP.NET Core's list binding). */}}
{{- range $index, $item := $value }}
- name: {{ printf "%s__%d" $name $index }}
  value: {{ include "dd.scalar" $item | quote }}
{{- end }}
{{- else if not (kindIs "invalid" $value) }}
- name: {{ $name }}
  value: {{ include "dd.scalar" $value | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The keys a service reads from a Secret the chart does not create (a secret you made, or one the
Secrets Store CSI driver syncs from Key Vault). Argument: dict "root" $ "key" <values key>.
Returns a JSON list.
*/}}
{{- define "dd.externalKeys" -}}
{{- $v := .root.Values -}}
{{- $service := index (fromYaml (include "dd.topology" .root)) .key -}}
{{- $keys := list -}}
{{- if and (has "cosmosDb" $service.uses) (not $v.emulators.enabled) (not $v.azure.cosmosDb.accountEndpoint) -}}
{{- $keys = append $keys "cosmos-connection-string" -}}
{{- end -}}
{{- if and (has "serviceBus" $service.uses) (not $v.emulators.enabled) (not $v.azure.serviceBus.fullyQualifiedNamespace) -}}
{{- $keys = append $keys "servicebus-connection-string" -}}
{{- end -}}
{{- if and (has "redis" $service.uses) (not $v.redis.enabled) -}}
{{- $keys = append $keys "redis-connection-string" -}}
{{- end -}}
{{- if $v.telemetry.applicationInsights.enabled -}}
{{- $keys = append $keys "applicationinsights-connection-string" -}}
{{- end -}}
{{- toJson $keys -}}
{{- end -}}

{{/*
The Secret holding a service's external connection strings, or "" if it has none. With Key
Vault each service gets its own synced Secret, read with its own identity (least privilege).
Argument: dict "root" $ "key" <values key>.
*/}}
{{- define "dd.externalSecretName" -}}
{{- $service := index (fromYaml (include "dd.topology" .root)) .key -}}
{{- if .root.Values.secrets.existingSecret -}}
{{ .root.Values.secrets.existingSecret }}
{{- else if and .root.Values.azure.keyVault.enabled (fromJsonArray (include "dd.externalKeys" .)) -}}
{{ $service.name }}-keyvault
{{- end -}}
{{- end -}}

{{/* Whether a service mounts the Secrets Store CSI volume (which is what makes the driver sync). */}}
{{- define "dd.needsKeyVault" -}}
{{- if and .root.Values.azure.keyVault.enabled (not .root.Values.secrets.existingSecret) (fromJsonArray (include "dd.externalKeys" .)) -}}
true
{{- end -}}
{{- end -}}

{{/* The Secret the chart renders with the emulators' well-known development connection strings. */}}
{{- define "dd.emulatorSecretName" -}}
{{ .Release.Name }}-emulator-connections
{{- end -}}

{{/* Names of the in-cluster dependencies. */}}
{{- define "dd.cosmosEmulatorName" -}}cosmosdb-emulator{{- end -}}
{{- define "dd.serviceBusEmulatorName" -}}servicebus-emulator{{- end -}}
{{- define "dd.redisName" -}}redis{{- end -}}

{{/*
A reference to one key of a Secret as an env entry.
Argument: dict "name" <env name> "secret" <secret name> "key" <key>.
*/}}
{{- define "dd.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end -}}

{{/*
How a service reaches what it depends on: backend base addresses, Cosmos DB, Service Bus, Redis,
exporters. Fails the render with a message naming the values to set when a connection has no source.
Argument: dict "root" $ "key" <values key>.
*/}}
{{- define "dd.connectionEnv" -}}
{{- $root := .root -}}
{{- $topology := fromYaml (include "dd.topology" $root) -}}
{{- $service := index $topology .key -}}
{{- $external := include "dd.externalSecretName" (dict "root" $root "key" .key) -}}
{{- range $backend := $service.calls }}
- name: Backends__{{ include "dd.backendSection" $backend }}__BaseAddress
  value: {{ printf "http://%s/" (index $topology $backend).name | quote }}
{{- end }}
{{- if has "cosmosDb" $service.uses }}
{{- if $root.Values.emulators.enabled }}
{{ include "dd.secretEnv" (dict "name" "Cosmos__ConnectionString" "secret" (include "dd.emulatorSecretName" $root) "key" "cosmos-connection-string") }}
{{- else if $root.Values.azure.cosmosDb.accountEndpoint }}
- name: Cosmos__AccountEndpoint
  value: {{ $root.Values.azure.cosmosDb.accountEndpoint | quote }}
{{- else if $external }}
{{ include "dd.secretEnv" (dict "name" "Cosmos__ConnectionString" "secret" $external "key" "cosmos-connection-string") }}
{{- else }}
{{- fail (printf "%s needs Cosmos DB: set emulators.enabled=true, azure.cosmosDb.accountEndpoint, or secrets.existingSecret with key cosmos-connection-string" $service.name) }}
{{- end }}
- name: Cosmos__DatabaseId
  value: {{ $root.Values.cosmosDb.databaseId | quote }}
{{- end }}
{{- if has "serviceBus" $service.uses }}
{{- if $root.Values.emulators.enabled }}
{{ include "dd.secretEnv" (dict "name" "ServiceBus__ConnectionString" "secret" (include "dd.emulatorSecretName" $root) "key" "servicebus-connection-string") }}
{{- else if $root.Values.azure.serviceBus.fullyQualifiedNamespace }}
- name: ServiceBus__FullyQualifiedNamespace
  value: {{ $root.Values.azure.serviceBus.fullyQualifiedNamespace | quote }}
{{- else if $external }}
{{ include "dd.secretEnv" (dict "name" "ServiceBus__ConnectionString" "secret" $external "key" "servicebus-connection-string") }}
{{- else }}
{{- fail (printf "%s needs Service Bus: set emulators.enabled=true, azure.serviceBus.fullyQualifiedNamespace, or secrets.existingSecret with key servicebus-connection-string" $service.name) }}
{{- end }}
{{- end }}
{{- if eq .key "workflow" }}
{{- /* The workflow must know the queue's MaxDeliveryCount to make the last delivery final: one value, the queue's. */}}
{{- $queue := index $root.Values.serviceBus.queues $root.Values.workflow.settings.ServiceBus.QueueName }}
- name: Processor__MaxDeliveryCount
  value: {{ include "dd.scalar" $queue.maxDeliveryCount | quote }}
{{- end }}
{{- if has "redis" $service.uses }}
{{- if $root.Values.redis.enabled }}
- name: Redis__ConnectionString
  value: {{ printf "%s:6379" (include "dd.redisName" $root) | quote }}
{{- else if $external }}
{{ include "dd.secretEnv" (dict "name" "Redis__ConnectionString" "secret" $external "key" "redis-connection-string") }}
{{- else }}
{{- fail (printf "%s needs Redis: set redis.enabled=true, or provide redis-connection-string through secrets.existingSecret or azure.keyVault" $service.name) }}
{{- end }}
{{- end }}
{{- if $service.public }}
{{ include "dd.authenticationEnv" $root }}
{{- end }}
{{- with include "dd.otlpEnv" $root }}
{{ . }}
{{- end }}
{{- if $root.Values.telemetry.applicationInsights.enabled }}
{{- if not $external }}
{{- fail "telemetry.applicationInsights.enabled needs the connection string in secrets.existingSecret or azure.keyVault (key applicationinsights-connection-string)" }}
{{- end }}
{{ include "dd.secretEnv" (dict "name" "APPLICATIONINSIGHTS_CONNECTION_STRING" "secret" $external "key" "applicationinsights-connection-string") }}
{{- end }}
{{- end -}}

{{/* The Secret holding the development issuer's signing key. */}}
{{- define "dd.developmentIssuerSecretName" -}}
{{- .Values.auth.developmentIssuer.existingSecret | default (printf "%s-development-issuer" .Release.Name) -}}
{{- end -}}

{{/* An Entra ID authority: auth.authority, or the tenant's v2.0 endpoint. */}}
{{- define "dd.entraAuthority" -}}
{{- $tenant := .Values.auth.entraId.tenantId | default .Values.azure.tenantId -}}
{{- if .Values.auth.authority -}}
{{ .Values.auth.authority }}
{{- else if $tenant -}}
{{ printf "https://login.microsoftonline.com/%s/v2.0" $tenant }}
{{- end -}}
{{- end -}}

{{/*
How a public service validates bearer tokens (section Authentication), from the auth values.
Fails the render naming the values to set when a mode lacks what it needs.
*/}}
{{- define "dd.authenticationEnv" -}}
{{- $auth := .Values.auth -}}
- name: Authentication__Mode
  value: {{ get (dict "developmentIssuer" "DevelopmentIssuer" "entraId" "EntraId" "openIdConnect" "OpenIdConnect") $auth.mode | quote }}
- name: Authentication__Audience
  value: {{ $auth.audience | quote }}
- name: Authentication__OwnerClaim
  value: {{ $auth.ownerClaim | quote }}
- name: Authentication__ClockSkew
  value: {{ $auth.clockSkew | quote }}
{{- if eq $auth.mode "developmentIssuer" }}
- name: Authentication__Issuer
  value: {{ $auth.developmentIssuer.issuer | quote }}
{{ include "dd.secretEnv" (dict "name" "Authentication__SigningKeys__0" "secret" (include "dd.developmentIssuerSecretName" .) "key" "signing-key") }}
{{- /* A key being rotated out: still accepted while it is in the Secret. */}}
- name: Authentication__SigningKeys__1
  valueFrom:
    secretKeyRef:
      name: {{ include "dd.developmentIssuerSecretName" . }}
      key: previous-signing-key
      optional: true
{{- else if eq $auth.mode "openIdConnect" }}
{{- if not $auth.authority }}
{{- fail "auth.mode openIdConnect needs auth.authority (the issuer's https URL)" }}
{{- end }}
- name: Authentication__Authority
  value: {{ $auth.authority | quote }}
{{- with $auth.issuer }}
- name: Authentication__Issuer
  value: {{ . | quote }}
{{- end }}
{{- else if eq $auth.mode "entraId" }}
{{- $authority := include "dd.entraAuthority" . }}
{{- if not $authority }}
{{- fail "auth.mode entraId needs auth.entraId.tenantId (or azure.tenantId, or auth.authority)" }}
{{- end }}
{{- if not $auth.entraId.clientId }}
{{- fail "auth.mode entraId needs auth.entraId.clientId (the API's application (client) id)" }}
{{- end }}
- name: Authentication__Authority
  value: {{ $authority | quote }}
- name: Authentication__ClientId
  value: {{ $auth.entraId.clientId | quote }}
{{- end }}
{{- end -}}

{{/* The configuration section name of a backend (values key → Backends:<Section>). */}}
{{- define "dd.backendSection" -}}
{{- get (dict "delivery" "Delivery" "package" "Package" "droneScheduler" "DroneScheduler") . -}}
{{- end -}}

{{/* Whether a service talks to Azure or to Entra ID's keys (the public services) outside the cluster; the OTLP collector has its own rule (dd.otlpEgress). */}}
{{- define "dd.needsExternalEgress" -}}
{{- $root := .root -}}
{{- $service := index (fromYaml (include "dd.topology" $root)) .key -}}
{{- $v := $root.Values -}}
{{- if or $v.telemetry.applicationInsights.enabled $v.azure.workloadIdentity.enabled $v.azure.keyVault.enabled (and (has "redis" $service.uses) (not $v.redis.enabled)) (and (or (has "cosmosDb" $service.uses) (has "serviceBus" $service.uses)) (not $v.emulators.enabled)) (and $service.public (ne $v.auth.mode "developmentIssuer")) -}}
true
{{- end -}}
{{- end -}}

{{/*
The standard exporter variables of telemetry.otlpEndpoint and telemetry.otlpProtocol, for the services and
the emulators alike. Empty when no endpoint is set.
*/}}
{{- define "dd.otlpEnv" -}}
{{- with .Values.telemetry.otlpEndpoint -}}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- with $.Values.telemetry.otlpProtocol }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ . | quote }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
The NetworkPolicy egress rule to the OTLP collector of telemetry.otlpEndpoint, on the endpoint's port (80 or
443 when it names none). A host <service>, <service>.<namespace> or <service>.<namespace>.svc[.<domain>] is a
Service of the cluster: the rule admits that namespace (the release's for a bare <service>). Any other host
(an IP address, a name of three labels or more) is outside the cluster: networkPolicy.externalEgress.cidrs.
Empty when no endpoint is set.
*/}}
{{- define "dd.otlpEgress" -}}
{{- with .Values.telemetry.otlpEndpoint -}}
{{- $url := urlParse . -}}
{{- $host := lower (regexReplaceAll ":[0-9]+$" $url.host "") -}}
{{- $port := regexFind "[0-9]+$" (regexFind ":[0-9]+$" $url.host) | default (ternary "443" "80" (eq $url.scheme "https")) -}}
{{- $labels := splitList "." $host -}}
{{- $namespace := "" -}}
{{- if eq (len $labels) 1 -}}
{{- $namespace = $.Release.Namespace -}}
{{- else if or (eq (len $labels) 2) (and (gt (len $labels) 2) (eq (index $labels 2) "svc")) -}}
{{- $namespace = index $labels 1 -}}
{{- end -}}
- ports: [{ port: {{ $port }}, protocol: TCP }]
  to:
{{- if $namespace }}
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ $namespace }}
{{- else }}
{{- range $.Values.networkPolicy.externalEgress.cidrs }}
    - ipBlock: { cidr: {{ . | quote }} }
{{- end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Pod-level security context: non-root, RuntimeDefault seccomp. Argument: uid. */}}
{{- define "dd.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container-level security context: read-only root, no privilege escalation, no capabilities. */}}
{{- define "dd.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The user the .NET images run as (the chiseled images' "app" user). */}}
{{- define "dd.appUid" -}}1654{{- end -}}

{{/* Prometheus scrape annotations (YAML map) for a pod serving /metrics on a port. Argument: dict "root" $ "port" <port>. */}}
{{- define "dd.scrapeAnnotations" -}}
{{- if .root.Values.telemetry.prometheusAnnotations -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end -}}
{{- end -}}

{{/* Checksum of the Cosmos DB topology, so a step that changes it restarts what caches it. */}}
{{- define "dd.cosmosChecksum" -}}
{{- toYaml (dict "db" .Values.cosmosDb "latency" .Values.emulators.cosmosDb.latency) | sha256sum -}}
{{- end -}}

{{- define "dd.serviceBusChecksum" -}}
{{- toYaml (dict "queues" .Values.serviceBus.queues "latency" .Values.emulators.serviceBus.latency) | sha256sum -}}
{{- end -}}
