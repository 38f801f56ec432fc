{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "agent-mesh.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped name: <release>-<chart> unless the release name already contains the chart name. */}}
{{- define "agent-mesh.fullname" -}}
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

{{/* Name of one component's objects; arg: dict root, component. */}}
{{- define "agent-mesh.componentName" -}}
{{- printf "%s-%s" (include "agent-mesh.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select one component's pods; arg: dict root, component. */}}
{{- define "agent-mesh.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agent-mesh.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every label of one component's objects; arg: dict root, component. */}}
{{- define "agent-mesh.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "agent-mesh.selectorLabels" . }}
app.kubernetes.io/part-of: agent-mesh
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end -}}

{{/* The image reference; the tag defaults to the chart's appVersion. */}}
{{- define "agent-mesh.image" -}}
{{- printf "%s:%s" (required "image.repository is required" .Values.image.repository) (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "agent-mesh.configName" -}}
{{- printf "%s-config" (include "agent-mesh.fullname" .) -}}
{{- end -}}

{{/* The Secret with DATABASE_URL and AUTH_*: the chart's own, or existingSecret. */}}
{{- define "agent-mesh.secretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{- .Values.secrets.existingSecret -}}
{{- else -}}
{{- printf "%s-secrets" (include "agent-mesh.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Seconds Kubernetes waits after SIGTERM: the pre-stop sleep, the whole drain, and a margin. */}}
{{- define "agent-mesh.terminationGrace" -}}
{{- $d := .Values.drain -}}
{{- add (int $d.preStopSleepSeconds) (int $d.timeoutSeconds) (int $d.graceMarginSeconds) -}}
{{- end -}}

{{/* Consumer group the agents runtime joins for one agent ({prefix}agents.{id}: ConsumerGroups.agentWorkers in libs/contract, checked by test/charts); arg: dict root, id. */}}
{{- define "agent-mesh.consumerGroup" -}}
{{- printf "%sagents.%s" .root.Values.kafka.topicPrefix .id -}}
{{- end -}}

{{/* Non-secret env every component shares (the ConfigMap's data). */}}
{{- define "agent-mesh.sharedEnv" -}}
KAFKA_BROKERS: {{ required "kafka.brokers is required" .Values.kafka.brokers | quote }}
KAFKA_CLIENT_ID: {{ .Values.kafka.clientId | quote }}
TOPIC_PREFIX: {{ .Values.kafka.topicPrefix | quote }}
{{- if .Values.kafka.sasl.enabled }}
KAFKA_SASL_MECHANISM: {{ .Values.kafka.sasl.mechanism | quote }}
{{- end }}
{{- if .Values.kafka.tls }}
KAFKA_SSL: "true"
{{- end }}
DRAIN_TIMEOUT_MS: {{ mul (int .Values.drain.timeoutSeconds) 1000 | quote }}
{{- /* The apps listen on 127.0.0.1 unless told otherwise; in a pod the Service must reach them. */}}
HTTP_HOST: "0.0.0.0"
{{- range $k, $v := .Values.extraEnv }}
{{ $k }}: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/* Secret data (DATABASE_URL and the AUTH_* variables that are set). */}}
{{- define "agent-mesh.secretEnv" -}}
{{- $a := .Values.secrets.auth -}}
DATABASE_URL: {{ required "secrets.databaseUrl is required unless secrets.existingSecret is set" .Values.secrets.databaseUrl | b64enc | quote }}
{{- with $a.apiKeys }}
AUTH_API_KEYS: {{ . | b64enc | quote }}
{{- end }}
{{- with $a.jwtIssuer }}
AUTH_JWT_ISSUER: {{ . | b64enc | quote }}
{{- end }}
{{- with $a.jwtAudience }}
AUTH_JWT_AUDIENCE: {{ . | b64enc | quote }}
{{- end }}
{{- with $a.jwksUrl }}
AUTH_JWKS_URL: {{ . | b64enc | quote }}
{{- end }}
{{- with $a.jwksJson }}
AUTH_JWKS_JSON: {{ . | b64enc | quote }}
{{- end }}
{{- with .Values.secrets.agents }}
{{- with .opsToken }}
AGENTS_OPS_TOKEN: {{ . | b64enc | quote }}
{{- end }}
{{- with .directoryToken }}
AGENTS_DIRECTORY_TOKEN: {{ . | b64enc | quote }}
{{- end }}
{{- with .toolTokenSecret }}
AGENTS_TOOL_TOKEN_SECRET: {{ . | b64enc | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The Secret of one component's Kafka principal while kafka.sasl.enabled, else nothing; arg: dict root,
key (directory|dispatcher|agents), group (an agent group: its own kafka.secretRef first; a group with
its own image must name one, a team never gets a platform principal).
*/}}
{{- define "agent-mesh.kafkaSecret" -}}
{{- $k := .root.Values.kafka -}}
{{- $g := .group | default dict -}}
{{- if $k.sasl.enabled -}}
{{- if $g.kafka -}}
{{- $g.kafka.secretRef -}}
{{- else if $g.image -}}
{{- fail (printf "agents.groups[%s] runs its own image: it needs its own kafka.secretRef (a Secret with the team's username and password) while kafka.sasl.enabled; a team never gets a platform principal" $g.name) -}}
{{- else -}}
{{- required (printf "kafka.credentials.%s.secretRef is required while kafka.sasl.enabled" .key) (index $k.credentials .key).secretRef -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
env and envFrom of an app container; arg: dict root, app, port, env, secretEnv (name → key of the
Secret), platformSecret (whether the release's Secret is read), secretRefs (more Secrets, read after it),
kafkaSecret (the Secret whose username and password are KAFKA_USERNAME and KAFKA_PASSWORD; empty: none).
*/}}
{{- define "agent-mesh.containerEnv" -}}
{{- $secret := include "agent-mesh.secretName" .root -}}
envFrom:
  - configMapRef:
      name: {{ include "agent-mesh.configName" .root }}
  {{- if .platformSecret }}
  - secretRef:
      name: {{ $secret }}
  {{- end }}
  {{- range .secretRefs }}
  - secretRef:
      name: {{ . }}
  {{- end }}
env:
  - name: {{ printf "%s_PORT" (upper (replace "-" "_" .app)) }}
    value: {{ .port | int | toString | quote }}
{{- range $k, $v := .env }}
  - name: {{ $k }}
    value: {{ $v | toString | quote }}
{{- end }}
{{- range $k, $key := .secretEnv }}
  - name: {{ $k }}
    valueFrom:
      secretKeyRef:
        name: {{ $secret }}
        key: {{ $key }}
{{- end }}
{{- with .kafkaSecret }}
  - name: KAFKA_USERNAME
    valueFrom:
      secretKeyRef:
        name: {{ . }}
        key: username
  - name: KAFKA_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ . }}
        key: password
{{- end }}
{{- end -}}

{{/* The stand-alone apps: values key and component (object suffix and entry folder under apps/). */}}
{{- define "agent-mesh.apps" -}}
{{- toJson (list (dict "key" "directory" "component" "directory") (dict "key" "dispatcher" "component" "dispatcher") (dict "key" "billingTools" "component" "billing-tools")) -}}
{{- end -}}

{{/* Issuer of grants and tool tokens: dispatcher.issuer, else its publicUrl, else its in-cluster URL. */}}
{{- define "agent-mesh.grantIssuer" -}}
{{- $d := .Values.dispatcher -}}
{{- $d.issuer | default $d.publicUrl | default (include "agent-mesh.serviceUrl" (dict "root" . "component" "dispatcher" "port" $d.service.port)) -}}
{{- end -}}

{{/* In-cluster URL of one component's Service; arg: dict root, component, port. */}}
{{- define "agent-mesh.serviceUrl" -}}
{{- printf "http://%s:%d" (include "agent-mesh.componentName" (dict "root" .root "component" .component)) (int .port) -}}
{{- end -}}

{{/*
A Deployment of one app; arg: dict root, component (object name suffix), app (directory|dispatcher|agents),
spec (the component's values), replicas (omitted when an autoscaler owns the count), env (extra env),
group (an agent group: its own image, command, args and secretRefs), kafkaSecret (its Kafka principal's Secret).
*/}}
{{- define "agent-mesh.deployment" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $ctx := dict "root" $root "component" .component -}}
{{- $g := .group | default dict -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "agent-mesh.componentName" $ctx }}
  labels:
    {{- include "agent-mesh.labels" $ctx | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" .replicas) }}
  replicas: {{ int .replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "agent-mesh.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "agent-mesh.selectorLabels" $ctx | nindent 8 }}
      annotations:
        checksum/config: {{ include "agent-mesh.sharedEnv" $root | sha256sum }}
        {{- if not $v.secrets.existingSecret }}
        checksum/secrets: {{ include "agent-mesh.secretEnv" $root | sha256sum }}
        {{- end }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- /* The apps never call the Kubernetes API. */}}
      automountServiceAccountToken: false
      securityContext:
        {{- toYaml $v.podSecurityContext | nindent 8 }}
      {{- with $v.topologySpread }}
      {{- if .enabled }}
      topologySpreadConstraints:
        - maxSkew: {{ int .maxSkew }}
          topologyKey: {{ .topologyKey }}
          whenUnsatisfiable: {{ .whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- include "agent-mesh.selectorLabels" $ctx | nindent 14 }}
      {{- end }}
      {{- end }}
      terminationGracePeriodSeconds: {{ include "agent-mesh.terminationGrace" $root }}
      containers:
        - name: {{ .app }}
          {{- with $g.image }}
          {{- /* A team's own image runs its own entry point (its CMD) unless the group names a command. */}}
          image: {{ printf "%s:%s" .repository .tag }}
          imagePullPolicy: {{ .pullPolicy | default $v.image.pullPolicy }}
          {{- else }}
          image: {{ include "agent-mesh.image" $root }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          {{- end }}
          {{- if $g.command }}
          command: {{ toJson $g.command }}
          {{- else if not $g.image }}
          command: ["node", {{ range .spec.nodeFlags }}{{ . | quote }}, {{ end }}"apps/{{ .app }}/dist/main.js"]
          {{- end }}
          {{- with $g.args }}
          args: {{ toJson . }}
          {{- end }}
          ports:
            - name: http
              containerPort: {{ int .spec.port }}
              protocol: TCP
          {{- include "agent-mesh.containerEnv" (dict "root" $root "app" .app "port" .spec.port "env" .env "secretEnv" (.secretEnv | default dict) "platformSecret" (empty $g.image) "secretRefs" ($g.secretRefs | default list) "kafkaSecret" (.kafkaSecret | default "")) | nindent 10 }}
          startupProbe:
            httpGet: { path: /livez, port: http }
            {{- toYaml $v.probes.startup | nindent 12 }}
          readinessProbe:
            httpGet: { path: /healthz, port: http }
            {{- toYaml $v.probes.readiness | nindent 12 }}
          livenessProbe:
            httpGet: { path: /livez, port: http }
            {{- toYaml $v.probes.liveness | nindent 12 }}
          lifecycle:
            preStop:
              exec:
                command: ["sleep", "{{ int $v.drain.preStopSleepSeconds }}"]
          resources:
            {{- toYaml .spec.resources | nindent 12 }}
          securityContext:
            {{- toYaml $v.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if .signingKey }}
            - name: signing-key
              mountPath: /etc/agent-mesh/signing
              readOnly: true
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- with .signingKey }}
        - name: signing-key
          secret:
            secretName: {{ .secretName }}
            defaultMode: 0400
        {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

{{/* A PodDisruptionBudget; arg: dict root, component, pdb. */}}
{{- define "agent-mesh.pdb" -}}
{{- $ctx := dict "root" .root "component" .component -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "agent-mesh.componentName" $ctx }}
  labels:
    {{- include "agent-mesh.labels" $ctx | nindent 4 }}
spec:
  {{- if hasKey .pdb "minAvailable" }}
  minAvailable: {{ .pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ .pdb.maxUnavailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "agent-mesh.selectorLabels" $ctx | nindent 6 }}
{{- end -}}

{{/* A Service; arg: dict root, component, service. */}}
{{- define "agent-mesh.service" -}}
{{- $ctx := dict "root" .root "component" .component -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "agent-mesh.componentName" $ctx }}
  labels:
    {{- include "agent-mesh.labels" $ctx | nindent 4 }}
spec:
  type: {{ .service.type }}
  selector:
    {{- include "agent-mesh.selectorLabels" $ctx | nindent 4 }}
  ports:
    - name: http
      port: {{ int .service.port }}
      targetPort: http
      protocol: TCP
{{- end -}}

{{/* An agent group's autoscaling as JSON: agents.autoscaling with the group's own keys over it; arg: dict root, group. */}}
{{- define "agent-mesh.groupAutoscaling" -}}
{{- merge (deepCopy (.group.autoscaling | default dict)) (deepCopy .root.Values.agents.autoscaling) | toJson -}}
{{- end -}}

{{/* The replica ceiling of an agent group: never above its partition count (extra consumers idle); arg: dict root, group. */}}
{{- define "agent-mesh.groupMaxReplicas" -}}
{{- $g := merge (dict "autoscaling" (include "agent-mesh.groupAutoscaling" . | fromJson)) .group -}}
{{- if gt (int $g.autoscaling.maxReplicas) (int $g.partitions) -}}
{{- fail (printf "agents.groups[%s].autoscaling.maxReplicas (%d) exceeds its partitions (%d): consumers beyond the partition count sit idle; raise the topic's partitions or lower maxReplicas" $g.name (int $g.autoscaling.maxReplicas) (int $g.partitions)) -}}
{{- end -}}
{{- if gt (int $g.autoscaling.minReplicas) (int $g.autoscaling.maxReplicas) -}}
{{- fail (printf "agents.groups[%s].autoscaling.minReplicas (%d) exceeds maxReplicas (%d)" $g.name (int $g.autoscaling.minReplicas) (int $g.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- min (int $g.autoscaling.maxReplicas) (int $g.partitions) -}}
{{- end -}}

{{/* A container that migrates one app's schema and exits; arg: dict root, app. */}}
{{- define "agent-mesh.migrateContainer" -}}
{{- $v := .root.Values -}}
{{- $ctx := dict "root" .root "component" "migrate" -}}
- name: migrate-{{ .app }}
  image: {{ include "agent-mesh.image" .root }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  command: ["node", "apps/{{ .app }}/dist/main.js"]
  envFrom:
    - configMapRef:
        name: {{ include "agent-mesh.componentName" $ctx }}
    - secretRef:
        name: {{ if $v.secrets.existingSecret }}{{ $v.secrets.existingSecret }}{{ else }}{{ include "agent-mesh.componentName" $ctx }}{{ end }}
  resources:
    {{- toYaml $v.migrations.resources | nindent 4 }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  volumeMounts:
    - name: tmp
      mountPath: /tmp
{{- end -}}

{{/* HPA behavior shared by the HPA and KEDA's generated HPA: scale up freely, scale down slowly. */}}
{{- define "agent-mesh.scaleBehavior" -}}
{{- $d := .Values.agents.scaleDown -}}
scaleDown:
  stabilizationWindowSeconds: {{ int $d.stabilizationWindowSeconds }}
  policies:
    - type: Pods
      value: {{ int $d.podsPerMinute }}
      periodSeconds: 60
{{- end -}}
