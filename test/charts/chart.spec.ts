// The Helm chart under charts/agent-mesh, linted and rendered by the real Helm engine (helm-java:
// values merged and checked against values.schema.json, templates executed by Helm's Go code), then
// every object checked against the Kubernetes, KEDA and Prometheus Operator schemas of the
// kubernetes-models packages and against what the apps read. No cluster, no broker.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { ConsumerGroups, TopicNames } from '@mesh/contract';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job, type IJob } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { HorizontalPodAutoscaler, type IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { ScaledObject, type IScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { NetworkPolicy, type INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PrometheusRule, type IPrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor, type IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { directoryConfigSpec } from '@mesh/app-directory';
import { dispatcherConfigSpec } from '@mesh/app-dispatcher';
import { agentsConfigSpec } from '@mesh/agent-runtime';
import { sampleAgents } from '@mesh/app-agents';
import { billingToolsConfigSpec } from '@mesh/app-billing-tools';
import { authSpec } from '@mesh/auth';
import { MeshMetrics } from '@mesh/telemetry';
import { repoRoot } from '../support/processes.js';
import { Chart, RenderFailure, ValuesSchemaError, type Manifest } from './support/helm.js';
import { StrictFields } from './support/strict-fields.js';

type GoMap = Record<string, unknown>;

const require = createRequire(import.meta.url);
const chart = new Chart(join(repoRoot, 'charts/agent-mesh'));
after(() => chart.close());
const docs = readFileSync(join(repoRoot, 'docs/charts.md'), 'utf8');
const operations = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');

type ModelClass = (new (data: never) => { validate(): void }) & { kind: string };
const model = (Model: ModelClass, module: string) => ({
  Model,
  // The module's type declarations, for the unknown-field check.
  decl: require.resolve(module).replace(/\.m?js$/, '.d.ts'),
  iface: `I${Model.kind}`,
});
/** apiVersion/kind → the model whose validate() applies that kind's JSON schema, and its declarations. */
const models: Record<string, ReturnType<typeof model>> = {
  'v1/ConfigMap': model(ConfigMap, 'kubernetes-models/v1/ConfigMap'),
  'v1/Secret': model(Secret, 'kubernetes-models/v1/Secret'),
  'v1/Service': model(Service, 'kubernetes-models/v1/Service'),
  'apps/v1/Deployment': model(Deployment, 'kubernetes-models/apps/v1/Deployment'),
  'batch/v1/Job': model(Job, 'kubernetes-models/batch/v1/Job'),
  'policy/v1/PodDisruptionBudget': model(PodDisruptionBudget, 'kubernetes-models/policy/v1/PodDisruptionBudget'),
  'autoscaling/v2/HorizontalPodAutoscaler': model(HorizontalPodAutoscaler, 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'),
  'keda.sh/v1alpha1/ScaledObject': model(ScaledObject, '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'),
  'networking.k8s.io/v1/NetworkPolicy': model(NetworkPolicy, 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy'),
  'monitoring.coreos.com/v1/PrometheusRule': model(PrometheusRule, '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule'),
  'monitoring.coreos.com/v1/ServiceMonitor': model(ServiceMonitor, '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor'),
};
const strict = new StrictFields();

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Renders and checks every object's kind, apiVersion, name and schema; returns the objects. */
async function renderValid(overrides: GoMap = {}): Promise<Manifest[]> {
  const manifests = await chart.render(overrides);
  const names = new Set<string>();
  for (const m of manifests) {
    const { source, ...obj } = m;
    const key = `${obj.apiVersion}/${obj.kind}`;
    const entry = models[key];
    assert.ok(entry, `${source}: unexpected ${key}`);
    assert.ok(obj.metadata?.name, `${source}: ${key} without metadata.name`);
    assert.match(obj.metadata.name, DNS_LABEL, `${key} name`);
    assert.ok(obj.metadata.name.length <= 63, `${obj.metadata.name} is longer than 63`);
    assert.ok(!names.has(`${key}/${obj.metadata.name}`), `duplicate ${key} ${obj.metadata.name}`);
    names.add(`${key}/${obj.metadata.name}`);
    const instance = new entry.Model(obj as never);
    assert.doesNotThrow(() => instance.validate(), `${source}: ${key} ${obj.metadata.name} breaks its schema`);
    assert.deepEqual(strict.unknownFields(obj, entry.iface, entry.decl), [], `${source}: ${key} ${obj.metadata.name} has fields its type does not declare`);
  }
  return manifests;
}

const ofKind = <T>(ms: Manifest[], kind: string): (Manifest & T)[] => ms.filter((m) => m.kind === kind) as (Manifest & T)[];
const byName = <T>(ms: Manifest[], kind: string, name: string): Manifest & T => {
  const found = ofKind<T>(ms, kind).find((m) => m.metadata.name === name);
  assert.ok(found, `no ${kind} ${name}`);
  return found;
};
const isHook = (m: Manifest) => m.metadata.annotations?.['helm.sh/hook'] !== undefined;
const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
const values = chart.defaults;
/** The demo tool server on, with the secret it needs. */
const withBillingTools = { billingTools: { enabled: true }, secrets: { agents: { toolTokenSecret: 'tool-token-secret-0123456789' } } };

type Autoscaling = Record<string, number>;
const agentValues = values.agents as { autoscaling: Autoscaling; groups: { name: string; agentIds: string[]; partitions: number; autoscaling?: Autoscaling }[] };
/** The groups with their effective autoscaling: agents.autoscaling with each group's own keys over it. */
const groups = { groups: agentValues.groups.map((g) => ({ ...g, autoscaling: { ...agentValues.autoscaling, ...g.autoscaling } })) };

test('the unknown-field check finds misspelt fields in core objects and CRDs, and leaves maps alone', async () => {
  const d = models['apps/v1/Deployment'];
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', labels: { anything: 'goes' }, annotations: { 'a/b': 'c' } },
    spec: { replica: 2, selector: { matchLabels: { a: 'b' } }, template: { spec: { containers: [{ name: 'a', readinesProbe: {}, resources: { limits: { cpu: '1' } } }] } } },
  };
  assert.deepEqual(strict.unknownFields(deployment, d.iface, d.decl), ['.spec.replica', '.spec.template.spec.containers[0].readinesProbe']);
  const so = models['keda.sh/v1alpha1/ScaledObject'];
  const scaled = { spec: { scaleTargetRef: { name: 'd' }, maxReplicas: 3, triggers: [{ type: 'kafka', metadata: { anyKey: 'x' } }] } };
  assert.deepEqual(strict.unknownFields(scaled, so.iface, so.decl), ['.spec.maxReplicas']);
  const sm = models['monitoring.coreos.com/v1/ServiceMonitor'];
  assert.deepEqual(strict.unknownFields({ spec: { selector: {}, endpoints: [{ port: 'http', paht: '/metrics' }] } }, sm.iface, sm.decl), ['.spec.endpoints[0].paht']);
});

test('default values render valid objects: 4 Deployments with a Service and a PDB each, config, migration hooks, HPAs', async () => {
  const ms = await renderValid();
  const count = (kind: string) => ms.filter((m) => m.kind === kind && !isHook(m)).length;
  assert.equal(count('Deployment'), 2 + groups.groups.length);
  assert.equal(count('Service'), count('Deployment'));
  assert.equal(count('PodDisruptionBudget'), count('Deployment'));
  assert.equal(count('HorizontalPodAutoscaler'), groups.groups.length);
  assert.equal(count('ScaledObject'), 0);
  assert.equal(count('ServiceMonitor'), 0, 'ServiceMonitor is off by default');
  assert.equal(count('ConfigMap'), 1);
  assert.equal(count('Secret'), 1);
  assert.equal(ms.filter((m) => m.kind === 'Job').length, 1);
  assert.equal(count('NetworkPolicy'), count('Deployment'));
});

test("every pod meets Pod Security 'restricted', mounts no service-account token, and spreads over nodes", async () => {
  const ms = await renderValid();
  const pods = [...ofKind<IDeployment>(ms, 'Deployment'), ...ofKind<IJob>(ms, 'Job')].map((w) => ({ name: w.metadata.name, labels: w.spec!.template.metadata!.labels!, pod: w.spec!.template.spec! }));
  for (const { name, labels, pod } of pods) {
    assert.equal(pod.automountServiceAccountToken, false, name);
    assert.equal(pod.securityContext?.runAsNonRoot, true, name);
    assert.equal(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault', name);
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      assert.equal(c.securityContext?.allowPrivilegeEscalation, false, `${name}/${c.name}`);
      assert.deepEqual(c.securityContext?.capabilities?.drop, ['ALL'], `${name}/${c.name}`);
      assert.equal(c.securityContext?.privileged ?? false, false);
    }
    if (labels['app.kubernetes.io/component'] === 'migrate') continue;
    const spread = pod.topologySpreadConstraints ?? [];
    assert.equal(spread.length, 1, `${name}: one topology spread constraint`);
    assert.equal(spread[0].topologyKey, 'kubernetes.io/hostname');
    assert.ok(selects(spread[0].labelSelector!.matchLabels!, labels), `${name}: spreads its own pods`);
  }
  // The restricted profile is part of values.schema.json: a pod without a seccomp profile is refused.
  await assert.rejects(() => chart.render({ podSecurityContext: { seccompProfile: null } }), ValuesSchemaError);
  const unspread = await renderValid({ topologySpread: { enabled: false } });
  for (const d of ofKind<IDeployment>(unspread, 'Deployment')) assert.equal(d.spec!.template.spec!.topologySpreadConstraints, undefined);
});

test('NetworkPolicies: one per component, ingress to its http port only, from the configured peers', async () => {
  const ms = await renderValid();
  const deployments = ofKind<IDeployment>(ms, 'Deployment');
  const policies = ofKind<INetworkPolicy>(ms, 'NetworkPolicy');
  assert.equal(policies.length, deployments.length);
  for (const np of policies) {
    const matched = deployments.filter((d) => selects(np.spec!.podSelector.matchLabels!, d.spec!.template.metadata!.labels!));
    assert.equal(matched.length, 1, `${np.metadata.name} selects one Deployment's pods`);
    assert.deepEqual(np.spec!.policyTypes, ['Ingress']);
    assert.deepEqual(np.spec!.ingress, [{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
  }
  const peers = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }];
  const limited = ofKind<INetworkPolicy>(await renderValid({ networkPolicy: { ingressFrom: { agents: peers } } }), 'NetworkPolicy');
  for (const np of limited) {
    const isAgents = np.metadata!.name!.includes('-agents-');
    assert.deepEqual(np.spec!.ingress![0].from, isAgents ? peers : undefined, np.metadata!.name);
  }
  assert.equal(ofKind(await renderValid({ networkPolicy: { enabled: false } }), 'NetworkPolicy').length, 0);
});

test('dispatcher.publicUrl becomes DISPATCHER_PUBLIC_URL; the default partitions are what the agents create', async () => {
  const envOf = (ms: Manifest[], component: string) => {
    const d = ofKind<IDeployment>(ms, 'Deployment').find((m) => m.metadata.name.endsWith(`-${component}`))!;
    return Object.fromEntries((d.spec!.template.spec!.containers[0].env ?? []).map((e) => [e.name, e.value]));
  };
  assert.equal(envOf(await renderValid(), 'dispatcher').DISPATCHER_PUBLIC_URL, undefined);
  const ms = await renderValid({ dispatcher: { publicUrl: 'https://a2a.example.com' } });
  assert.equal(envOf(ms, 'dispatcher').DISPATCHER_PUBLIC_URL, 'https://a2a.example.com');
  assert.ok('DISPATCHER_PUBLIC_URL' in dispatcherConfigSpec);
  await assert.rejects(() => chart.render({ dispatcher: { publicUrl: 'not a url' } }), ValuesSchemaError);
  // A group's partitions size its autoscaling; the topic is created by the agents from the agent's channel.
  for (const g of groups.groups) {
    for (const id of g.agentIds) {
      const agent = (sampleAgents as Record<string, { channel: { partitions: number } }>)[id];
      assert.ok(agent, `group ${g.name} runs the sample agent ${id}`);
      assert.equal(g.partitions, agent.channel.partitions, `${g.name}: partitions as the agents create ${id}'s command topic`);
    }
  }
});

test('a group overrides any subset of agents.autoscaling; the rest comes from the defaults', async () => {
  const ms = await renderValid({ agents: { groups: [{ name: 'solo', agentIds: ['echo-agent'], partitions: 4, autoscaling: { maxReplicas: 2 } }] } });
  const hpa = ofKind<IHorizontalPodAutoscaler>(ms, 'HorizontalPodAutoscaler')[0];
  assert.equal(hpa.spec!.maxReplicas, 2);
  assert.equal(hpa.spec!.minReplicas, agentValues.autoscaling.minReplicas);
  assert.equal(hpa.spec!.metrics![0].resource!.target.averageUtilization, agentValues.autoscaling.targetCPUUtilizationPercentage);
  const so = ofKind<IScaledObject>(await renderValid({ keda: { enabled: true }, agents: { autoscaling: { lagThreshold: 7 }, groups: [{ name: 'solo', agentIds: ['echo-agent'], partitions: 4 }] } }), 'ScaledObject')[0];
  assert.equal(so.spec!.triggers[0].metadata.lagThreshold, '7');
  assert.equal(so.spec!.maxReplicaCount, agentValues.autoscaling.maxReplicas);
});

test('each Deployment runs its app from the one image, with probes, resources, drain-long grace and the config', async () => {
  const ms = await renderValid(withBillingTools);
  const config = ofKind<{ data: Record<string, string> }>(ms, 'ConfigMap').find((m) => !isHook(m))!;
  const secret = ofKind<{ data: Record<string, string> }>(ms, 'Secret').find((m) => !isHook(m))!;
  const drain = values.drain as { timeoutSeconds: number; preStopSleepSeconds: number };
  const ports: Record<string, number> = { directory: 8081, dispatcher: 8080, agents: 8082, 'billing-tools': 8083 };
  // The chart's ports are the apps' defaults (what npm start and docker-compose.yml use).
  const specs = {
    directory: directoryConfigSpec.DIRECTORY_PORT,
    dispatcher: dispatcherConfigSpec.DISPATCHER_PORT,
    agents: agentsConfigSpec.AGENTS_PORT,
    'billing-tools': billingToolsConfigSpec.BILLING_TOOLS_PORT,
  };
  const valuesKey: Record<string, string> = { 'billing-tools': 'billingTools' };
  // The apps bind 127.0.0.1 by default; in a pod they must listen where the Service reaches them.
  assert.equal(config.data.HTTP_HOST, '0.0.0.0');
  for (const [app, spec] of Object.entries(specs)) {
    assert.equal(spec.parse(undefined), ports[app]);
    assert.equal((values[valuesKey[app] ?? app] as GoMap).port, ports[app]);
  }
  for (const d of ofKind<IDeployment>(ms, 'Deployment')) {
    const pod = d.spec!.template.spec!;
    assert.equal(pod.containers.length, 1);
    const c = pod.containers[0];
    const app = c.name;
    assert.ok(app in ports, `${d.metadata.name}: container ${app}`);
    // The Node flags before it are held to scripts/node-flags.mjs by their own test.
    assert.deepEqual([c.command![0], c.command!.at(-1)], ['node', `apps/${app}/dist/main.js`]);
    assert.ok(existsSync(join(repoRoot, `apps/${app}/dist/main.js`)), `${app}: the entry point exists after npm run build`);
    assert.equal(c.image, `${(values.image as GoMap).repository}:${chart.meta.appVersion}`);
    assert.deepEqual(c.ports, [{ name: 'http', containerPort: ports[app], protocol: 'TCP' }]);
    const portVar = `${app.toUpperCase().replace('-', '_')}_PORT`;
    assert.deepEqual(c.env?.find((e) => e.name === portVar), { name: portVar, value: String(ports[app]) });
    assert.deepEqual(c.readinessProbe?.httpGet, { path: '/healthz', port: 'http' });
    assert.deepEqual(c.livenessProbe?.httpGet, { path: '/livez', port: 'http' });
    assert.deepEqual(c.startupProbe?.httpGet, { path: '/livez', port: 'http' });
    for (const kind of ['requests', 'limits'] as const) {
      assert.ok(c.resources?.[kind]?.cpu && c.resources[kind]!.memory, `${d.metadata.name}: ${kind} for cpu and memory`);
    }
    // Kubernetes must not kill a pod that is still draining: grace > pre-stop sleep + drain timeout.
    assert.ok(pod.terminationGracePeriodSeconds! > drain.preStopSleepSeconds + drain.timeoutSeconds, `${d.metadata.name} grace period`);
    assert.deepEqual(c.lifecycle?.preStop?.exec?.command, ['sleep', String(drain.preStopSleepSeconds)]);
    assert.deepEqual(
      c.envFrom?.map((e) => e.configMapRef?.name ?? e.secretRef?.name),
      [config.metadata.name, secret.metadata.name],
    );
    assert.equal(c.securityContext?.allowPrivilegeEscalation, false);
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.ok(selects(d.spec!.selector.matchLabels!, d.spec!.template.metadata!.labels!), 'selector matches the pod labels');
  }
  assert.equal(config.data.DRAIN_TIMEOUT_MS, String(drain.timeoutSeconds * 1000));
  assert.equal(config.data.KAFKA_BROKERS, (values.kafka as GoMap).brokers);
  assert.equal(Buffer.from(secret.data.DATABASE_URL, 'base64').toString(), (values.secrets as GoMap).databaseUrl);
});

test('every Deployment has exactly one PDB and one Service, and none selects another component', async () => {
  for (const ms of [await renderValid(), await renderValid({ keda: { enabled: true } })]) {
    const deployments = ofKind<IDeployment>(ms, 'Deployment');
    const podLabels = deployments.map((d) => d.spec!.template.metadata!.labels!);
    for (const [kind, selectorOf] of [
      ['PodDisruptionBudget', (m: Manifest) => (m as Manifest & IPodDisruptionBudget).spec!.selector!.matchLabels!],
      ['Service', (m: Manifest) => (m as Manifest & IService).spec!.selector!],
    ] as const) {
      for (const m of ofKind(ms, kind)) {
        const matched = podLabels.filter((labels) => selects(selectorOf(m), labels));
        assert.equal(matched.length, 1, `${kind} ${m.metadata.name} selects exactly one Deployment's pods`);
      }
      assert.equal(ofKind(ms, kind).length, deployments.length);
    }
    for (const pdb of ofKind<IPodDisruptionBudget>(ms, 'PodDisruptionBudget')) {
      assert.ok((pdb.spec!.maxUnavailable ?? pdb.spec!.minAvailable) !== undefined, 'PDB bounds disruptions');
    }
    for (const svc of ofKind<IService>(ms, 'Service')) assert.equal(svc.spec!.ports![0].targetPort, 'http');
  }
});

test('KEDA on: one kafka ScaledObject per agent group on its command topics and consumer group, max replicas <= partitions', async () => {
  const ms = await renderValid({ keda: { enabled: true }, kafka: { topicPrefix: 'prod.', brokers: 'k1:9092,k2:9092' } });
  assert.equal(ofKind(ms, 'HorizontalPodAutoscaler').length, 0, 'no HPA next to KEDA');
  const scaled = ofKind<IScaledObject>(ms, 'ScaledObject');
  assert.equal(scaled.length, groups.groups.length);
  for (const g of groups.groups) {
    const so = scaled.find((s) => s.metadata.name.endsWith(`-agents-${g.name}`));
    assert.ok(so, `ScaledObject of group ${g.name}`);
    const target = byName<IDeployment>(ms, 'Deployment', so.spec!.scaleTargetRef.name);
    assert.equal(target.spec!.replicas, undefined, 'the autoscaler owns the replica count');
    const env = Object.fromEntries(target.spec!.template.spec!.containers[0].env!.map((e) => [e.name, e.value]));
    assert.equal(env.AGENTS_AGENT_IDS, g.agentIds.join(','));
    assert.ok(so.spec!.maxReplicaCount! <= g.partitions, `${g.name}: maxReplicaCount ${so.spec!.maxReplicaCount} <= ${g.partitions} partitions`);
    assert.equal(so.spec!.maxReplicaCount, Math.min(g.autoscaling.maxReplicas, g.partitions));
    assert.equal(so.spec!.minReplicaCount, g.autoscaling.minReplicas);
    assert.deepEqual(so.spec!.advanced!.horizontalPodAutoscalerConfig!.behavior!.scaleDown!.policies, [{ type: 'Pods', value: 1, periodSeconds: 60 }]);
    assert.deepEqual(
      so.spec!.triggers.map((t) => [t.type, t.metadata.topic]),
      g.agentIds.map((id) => ['kafka', new TopicNames('prod.').commands(id)]),
    );
    for (const [i, t] of so.spec!.triggers.entries()) {
      assert.equal(t.metadata.bootstrapServers, 'k1:9092,k2:9092');
      // KEDA reads the lag of the group the agents runtime joins for that agent (the template spells
      // the contract's name out: Helm cannot import it, so this checks they agree).
      assert.equal(t.metadata.consumerGroup, new ConsumerGroups('prod.').agentWorkers(g.agentIds[i]));
      assert.equal(t.metadata.lagThreshold, String(g.autoscaling.lagThreshold));
      assert.equal(t.metadata.allowIdleConsumers, 'false');
      assert.equal(t.metadata.offsetResetPolicy, 'earliest');
    }
  }
});

test('KEDA off: an HPA on CPU per agent group, capped at the partition count', async () => {
  const ms = await renderValid({ keda: { enabled: false } });
  assert.equal(ofKind(ms, 'ScaledObject').length, 0);
  const hpas = ofKind<IHorizontalPodAutoscaler>(ms, 'HorizontalPodAutoscaler');
  assert.equal(hpas.length, groups.groups.length);
  for (const g of groups.groups) {
    const hpa = hpas.find((h) => h.metadata.name.endsWith(`-agents-${g.name}`))!;
    assert.ok(hpa.spec!.maxReplicas <= g.partitions);
    assert.equal(hpa.spec!.metrics![0].resource!.name, 'cpu');
    assert.equal(hpa.spec!.metrics![0].resource!.target.averageUtilization, g.autoscaling.targetCPUUtilizationPercentage);
    byName(ms, 'Deployment', hpa.spec!.scaleTargetRef.name);
    assert.equal(hpa.spec!.behavior!.scaleDown!.stabilizationWindowSeconds, 300);
  }
});

test('a group whose maxReplicas exceeds its partitions, or a group name used twice, fails the render with a clear message', async () => {
  const tooMany = {
    agents: { groups: [{ name: 'billing', agentIds: ['refund-agent'], partitions: 4, autoscaling: { minReplicas: 1, maxReplicas: 10, lagThreshold: 50, activationLagThreshold: 0, targetCPUUtilizationPercentage: 70 } }] },
  };
  for (const keda of [true, false]) {
    await assert.rejects(
      () => chart.render({ ...tooMany, keda: { enabled: keda } }),
      (e: Error) => e instanceof RenderFailure && /agents\.groups\[billing\]\.autoscaling\.maxReplicas \(10\) exceeds its partitions \(4\)/.test(e.message),
    );
  }
  const twice = structuredClone(tooMany);
  twice.agents.groups[0].autoscaling.maxReplicas = 4;
  twice.agents.groups.push(structuredClone(twice.agents.groups[0]));
  await assert.rejects(() => chart.render(twice), (e: Error) => e instanceof RenderFailure && /the name "billing" is used twice/.test(e.message));
  // At the partition count it renders.
  const ok = structuredClone(tooMany);
  ok.agents.groups[0].autoscaling.maxReplicas = 4;
  const so = ofKind<IScaledObject>(await renderValid({ ...ok, keda: { enabled: true } }), 'ScaledObject');
  assert.equal(so[0].spec!.maxReplicaCount, 4);
});

test('large numbers render as integers, not as the float64 form 1e+06 that Kubernetes and KEDA reject', async () => {
  const big = {
    keda: { enabled: true, cooldownPeriod: 1000000 },
    migrations: { ttlSecondsAfterFinished: 1000000 },
    agents: {
      groups: [{ name: 'bulk', agentIds: ['echo-agent'], partitions: 1000000, autoscaling: { minReplicas: 1, maxReplicas: 1000000, lagThreshold: 5000000, activationLagThreshold: 1000000, targetCPUUtilizationPercentage: 70 } }],
    },
  };
  const ms = await renderValid(big);
  const so = ofKind<IScaledObject>(ms, 'ScaledObject')[0];
  assert.equal(so.spec!.maxReplicaCount, 1000000);
  assert.equal(so.spec!.cooldownPeriod, 1000000);
  assert.equal(so.spec!.triggers[0].metadata.lagThreshold, '5000000');
  assert.equal(so.spec!.triggers[0].metadata.activationLagThreshold, '1000000');
  assert.equal(ofKind<IJob>(ms, 'Job')[0].spec!.ttlSecondsAfterFinished, 1000000);
});

/** Worker groups of teams and a bridge beside the sample agents' groups. */
const workerGroups = [
  ...agentValues.groups,
  {
    name: 'team-words',
    agentIds: ['word-count-agent'],
    partitions: 4,
    image: { repository: 'registry.example.com/team/team-agent', tag: '1.0.0', pullPolicy: 'Always' },
    secretRefs: ['team-words-secrets'],
    kafka: { secretRef: 'team-words-kafka' },
    env: { LOG_LEVEL: 'info' },
  },
  { name: 'bridge', agentIds: ['remote-agent', 'partner-agent'], partitions: 2, command: ['node', 'apps/bridge/dist/main.js'], args: ['--verbose'], replicas: 2 },
];

test("worker groups: a team's own image with its own Secrets, a bridge by command, fixed replicas, KEDA lag per group", async () => {
  const ms = await renderValid({ ...withBillingTools, keda: { enabled: true }, kafka: { topicPrefix: 'prod.' }, agents: { groups: workerGroups } });
  const config = ofKind<{ data: Record<string, string> }>(ms, 'ConfigMap').find((m) => !isHook(m))!;
  const secret = ofKind<{ data: Record<string, string> }>(ms, 'Secret').find((m) => !isHook(m))!;
  const directory = byName<IService>(ms, 'Service', 'mesh-agent-mesh-directory');
  const container = (group: string) => byName<IDeployment>(ms, 'Deployment', `mesh-agent-mesh-agents-${group}`).spec!.template.spec!.containers[0];
  const envOf = (c: IContainer) => Object.fromEntries(c.env!.map((e) => [e.name, e.value]));

  // The team's image runs its own entry point, reads the team's Secret and never the platform's.
  const team = container('team-words');
  assert.equal(team.image, 'registry.example.com/team/team-agent:1.0.0');
  assert.equal(team.imagePullPolicy, 'Always');
  assert.equal(team.command, undefined, "the image's own CMD");
  assert.deepEqual(
    team.envFrom?.map((e) => e.configMapRef?.name ?? e.secretRef?.name),
    [config.metadata.name, 'team-words-secrets'],
  );
  const teamEnv = envOf(team);
  assert.equal(teamEnv.AGENTS_AGENT_IDS, 'word-count-agent');
  assert.equal(teamEnv.AGENTS_DIRECTORY_URL, `http://${directory.metadata!.name}:${directory.spec!.ports![0].port}`, 'it registers with its own token');
  assert.equal(teamEnv.AGENTS_MCP_SERVERS, undefined, "the platform's tool servers are not the team's");
  assert.equal(teamEnv.LOG_LEVEL, 'info');
  assert.deepEqual(
    team.env!.filter((e) => e.valueFrom).map((e) => [e.name, e.valueFrom!.secretKeyRef!.name, e.valueFrom!.secretKeyRef!.key]),
    [
      ['KAFKA_USERNAME', 'team-words-kafka', 'username'],
      ['KAFKA_PASSWORD', 'team-words-kafka', 'password'],
    ],
    "no key of the release Secret: only the team's own Kafka principal",
  );

  // The bridge: the platform's image and Secret, its own entry point, a fixed count and no autoscaler.
  const bridge = container('bridge');
  assert.equal(bridge.image, `${(values.image as GoMap).repository}:${chart.meta.appVersion}`);
  assert.deepEqual(bridge.command, ['node', 'apps/bridge/dist/main.js']);
  assert.deepEqual(bridge.args, ['--verbose']);
  assert.deepEqual(
    bridge.envFrom?.map((e) => e.configMapRef?.name ?? e.secretRef?.name),
    [config.metadata.name, secret.metadata.name],
  );
  assert.equal(envOf(bridge).AGENTS_AGENT_IDS, 'remote-agent,partner-agent');
  assert.equal(byName<IDeployment>(ms, 'Deployment', 'mesh-agent-mesh-agents-bridge').spec!.replicas, 2);
  const scaled = ofKind<IScaledObject>(ms, 'ScaledObject');
  assert.equal(scaled.find((s) => s.metadata.name.endsWith('-agents-bridge')), undefined, 'a fixed count has no autoscaler');

  // The sample groups are unchanged: the platform image and entry point.
  for (const g of agentValues.groups) assert.equal(container(g.name).command!.at(-1), 'apps/agents/dist/main.js');

  // KEDA scales the team's group on the lag of its own agents' consumer group.
  const so = scaled.find((s) => s.metadata.name.endsWith('-agents-team-words'))!;
  assert.equal(so.spec!.scaleTargetRef.name, 'mesh-agent-mesh-agents-team-words');
  assert.deepEqual(
    so.spec!.triggers.map((t) => [t.type, t.metadata.topic, t.metadata.consumerGroup]),
    [['kafka', new TopicNames('prod.').commands('word-count-agent'), new ConsumerGroups('prod.').agentWorkers('word-count-agent')]],
  );
  assert.equal(scaled.length, agentValues.groups.length + 1);

  // Each group has its Service and PDB, selecting only its own pods.
  for (const g of ['team-words', 'bridge']) {
    byName(ms, 'Service', `mesh-agent-mesh-agents-${g}`);
    byName(ms, 'PodDisruptionBudget', `mesh-agent-mesh-agents-${g}`);
  }
});

/** The Secret and keys each Kafka setting of a container comes from. */
const kafkaPrincipalOf = (c: IContainer) =>
  Object.fromEntries(
    (c.env ?? []).filter((e) => e.name.startsWith('KAFKA_')).map((e) => [e.name, `${e.valueFrom?.secretKeyRef?.name}/${e.valueFrom?.secretKeyRef?.key}`]),
  );

test('Kafka principals: on by default, each component its own Secret, the mechanism in the config; TLS on request; off renders none', async () => {
  const ms = await renderValid({ ...withBillingTools, agents: { groups: workerGroups } });
  const config = ofKind<{ data: Record<string, string> }>(ms, 'ConfigMap').find((m) => !isHook(m))!;
  assert.equal(config.data.KAFKA_SASL_MECHANISM, 'scram-sha-512');
  assert.equal(config.data.KAFKA_SSL, undefined);
  const containerOf = (name: string) => byName<IDeployment>(ms, 'Deployment', `mesh-agent-mesh-${name}`).spec!.template.spec!.containers[0];
  const principal = (secret: string) => ({ KAFKA_USERNAME: `${secret}/username`, KAFKA_PASSWORD: `${secret}/password` });
  assert.deepEqual(kafkaPrincipalOf(containerOf('directory')), principal('agent-mesh-kafka-directory'));
  assert.deepEqual(kafkaPrincipalOf(containerOf('dispatcher')), principal('agent-mesh-kafka-dispatcher'));
  assert.deepEqual(kafkaPrincipalOf(containerOf('billing-tools')), {}, 'billing-tools never connects to Kafka');
  for (const g of [...agentValues.groups.map((x) => x.name), 'bridge'])
    assert.deepEqual(kafkaPrincipalOf(containerOf(`agents-${g}`)), principal('agent-mesh-kafka-agents'), g);
  assert.deepEqual(kafkaPrincipalOf(containerOf('agents-team-words')), principal('team-words-kafka'));
  // The migration Job runs no Kafka client.
  for (const job of ofKind<IJob>(ms, 'Job'))
    for (const c of job.spec!.template.spec!.containers) assert.deepEqual(kafkaPrincipalOf(c), {}, c.name);

  const named = await renderValid({
    kafka: { sasl: { mechanism: 'scram-sha-256' }, tls: true, credentials: { dispatcher: { secretRef: 'prod-kafka-dispatcher' } } },
  });
  const namedConfig = ofKind<{ data: Record<string, string> }>(named, 'ConfigMap').find((m) => !isHook(m))!;
  assert.equal(namedConfig.data.KAFKA_SASL_MECHANISM, 'scram-sha-256');
  assert.equal(namedConfig.data.KAFKA_SSL, 'true');
  assert.deepEqual(
    kafkaPrincipalOf(byName<IDeployment>(named, 'Deployment', 'mesh-agent-mesh-dispatcher').spec!.template.spec!.containers[0]),
    principal('prod-kafka-dispatcher'),
  );

  const off = await renderValid({ kafka: { sasl: { enabled: false } } });
  assert.equal(ofKind<{ data: Record<string, string> }>(off, 'ConfigMap').find((m) => !isHook(m))!.data.KAFKA_SASL_MECHANISM, undefined);
  for (const d of ofKind<IDeployment>(off, 'Deployment')) assert.deepEqual(kafkaPrincipalOf(d.spec!.template.spec!.containers[0]), {}, d.metadata!.name);
});

test("a team's own image without its own Kafka principal, or a component without a Secret name, is refused", async () => {
  const teamWithoutPrincipal: GoMap = { ...workerGroups.find((g) => g.name === 'team-words')! };
  delete teamWithoutPrincipal.kafka;
  await assert.rejects(
    () => chart.render({ agents: { groups: [teamWithoutPrincipal] } }),
    (e: Error) => e instanceof RenderFailure && /agents\.groups\[team-words\] runs its own image: it needs its own kafka\.secretRef/.test(e.message),
  );
  await assert.rejects(() => chart.render({ kafka: { credentials: { agents: { secretRef: '' } } } }), ValuesSchemaError);
  await assert.rejects(() => chart.render({ kafka: { sasl: { mechanism: 'gssapi' } } }), ValuesSchemaError);
  // Without authentication a team's image needs no principal.
  await renderValid({ kafka: { sasl: { enabled: false } }, agents: { groups: [teamWithoutPrincipal] } });
});

test('a worker group with more fixed replicas than partitions, or an image without a tag, is refused', async () => {
  const bridge = workerGroups.at(-1)!;
  await assert.rejects(
    () => chart.render({ agents: { groups: [{ ...bridge, replicas: 3 }] } }),
    (e: Error) => e instanceof RenderFailure && /agents\.groups\[bridge\]\.replicas \(3\) exceeds its partitions \(2\)/.test(e.message),
  );
  await assert.rejects(
    () => chart.render({ agents: { groups: [{ name: 'team', agentIds: ['a'], partitions: 1, image: { repository: 'r/team' } }] } }),
    ValuesSchemaError,
  );
  await assert.rejects(() => chart.render({ agents: { groups: [{ name: 'team', agentIds: ['a'], partitions: 1, secretRefs: ['Not_A_Name'] }] } }), ValuesSchemaError);
});

test('values that break values.schema.json are rejected before rendering', async () => {
  const bad: [string, GoMap][] = [
    ['bad topic prefix', { kafka: { topicPrefix: 'no spaces!' } }],
    ['brokers not host:port', { kafka: { brokers: 'nonsense' } }],
    ['keda.enabled as a string', { keda: { enabled: 'yes' } }],
    ['unknown offset reset policy', { keda: { offsetResetPolicy: 'middle' } }],
    ['port out of range', { dispatcher: { port: 70000 } }],
    ['missing image repository', { image: { repository: null } }],
    ['unknown pull policy', { image: { pullPolicy: 'Sometimes' } }],
    ['typo in a key', { dispatcher: { replica: 3 } }],
    ['zero partitions', { agents: { groups: [{ name: 'g', agentIds: ['a'], partitions: 0, autoscaling: { minReplicas: 1, maxReplicas: 1, lagThreshold: 1, activationLagThreshold: 0, targetCPUUtilizationPercentage: 70 } }] } }],
    ['group without agents', { agents: { groups: [{ name: 'g', agentIds: [], partitions: 1, autoscaling: { minReplicas: 1, maxReplicas: 1, lagThreshold: 1, activationLagThreshold: 0, targetCPUUtilizationPercentage: 70 } }] } }],
    ['no database URL and no existing secret', { secrets: { databaseUrl: null } }],
    ['non-postgres database URL', { secrets: { databaseUrl: 'mysql://db/x' } }],
    ['drain timeout zero', { drain: { timeoutSeconds: 0 } }],
    ['PDB with neither bound', { directory: { pdb: { maxUnavailable: null } } }],
    ['resources without requests', { agents: { resources: { requests: null } } }],
  ];
  for (const [why, overrides] of bad) {
    await assert.rejects(() => chart.render(overrides), ValuesSchemaError, why);
  }
  // Helm's refusal names the offending key.
  await assert.rejects(() => chart.render({ kafka: { brokerz: 'a:9092' } }), (e: Error) => e instanceof ValuesSchemaError && /brokerz/.test(e.message));
  // The same shapes with good values pass: the schema is not simply rejecting overrides.
  await assert.doesNotReject(() => chart.render({ kafka: { topicPrefix: 'prod-1.', brokers: 'a:9092, b:9093' }, dispatcher: { port: 9000 }, secrets: { existingSecret: 'mine', databaseUrl: null } }));
});

test('the migration Job is a pre-install/pre-upgrade hook running every app with MIGRATE_ONLY=true, after its config hooks', async () => {
  const ms = await renderValid();
  const job = ofKind<IJob>(ms, 'Job')[0];
  const hook = (m: Manifest) => m.metadata.annotations ?? {};
  assert.equal(hook(job)['helm.sh/hook'], 'pre-install,pre-upgrade');
  const pod = job.spec!.template.spec!;
  assert.equal(pod.restartPolicy, 'Never');
  const steps: IContainer[] = [...(pod.initContainers ?? []), ...pod.containers];
  assert.deepEqual(
    steps.map((c) => c.command),
    ['directory', 'dispatcher', 'agents'].map((app) => ['node', `apps/${app}/dist/main.js`]),
  );
  const hookConfig = byName<{ data: Record<string, string> }>(ms, 'ConfigMap', steps[0].envFrom![0].configMapRef!.name!);
  const hookSecret = byName(ms, 'Secret', steps[0].envFrom![1].secretRef!.name!);
  assert.equal(hookConfig.data.MIGRATE_ONLY, 'true');
  for (const m of [hookConfig, hookSecret]) {
    assert.equal(hook(m)['helm.sh/hook'], 'pre-install,pre-upgrade', 'hooks run before release objects exist, so the Job needs its own config');
    assert.ok(Number(hook(m)['helm.sh/hook-weight']) < Number(hook(job)['helm.sh/hook-weight']), 'config hooks come before the Job');
  }
  assert.equal((await renderValid({ migrations: { enabled: false } })).filter((m) => m.kind === 'Job').length, 0);
});

test('existingSecret: no chart Secret, every pod and the Job read the named one', async () => {
  const ms = await renderValid({ secrets: { existingSecret: 'mesh-prod', databaseUrl: null } });
  assert.equal(ofKind(ms, 'Secret').length, 0);
  for (const d of ofKind<IDeployment>(ms, 'Deployment')) {
    assert.equal(d.spec!.template.spec!.containers[0].envFrom![1].secretRef!.name, 'mesh-prod');
  }
  const job = ofKind<IJob>(ms, 'Job')[0];
  assert.equal(job.spec!.template.spec!.containers[0].envFrom![1].secretRef!.name, 'mesh-prod');
});

test('ServiceMonitor on: one per component on the http port and the metrics path', async () => {
  const ms = await renderValid({ metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } } });
  const monitors = ofKind<IServiceMonitor>(ms, 'ServiceMonitor');
  const services = ofKind<IService>(ms, 'Service');
  assert.equal(monitors.length, services.length);
  for (const sm of monitors) {
    assert.equal(sm.metadata.labels?.release, 'prom');
    assert.deepEqual(sm.spec.endpoints!.map((e) => [e.port, e.path]), [['http', '/metrics']]);
    assert.equal(services.filter((s) => selects(sm.spec.selector.matchLabels!, s.metadata!.labels!)).length, 1);
  }
});

test('billingTools on: its Deployment and Service, verifying the dispatcher JWKS (and the legacy secret when set); off by default', async () => {
  const off = await renderValid();
  assert.ok(!ofKind(off, 'Deployment').some((d) => d.metadata.name.endsWith('-billing-tools')));
  const agentsEnv = (ms: Manifest[]) =>
    Object.fromEntries(ofKind<IDeployment>(ms, 'Deployment').find((d) => d.metadata.name.includes('-agents-'))!.spec!.template.spec!.containers[0].env!.map((e) => [e.name, e.value]));
  assert.equal(agentsEnv(off).AGENTS_MCP_SERVERS, undefined);
  // Without the legacy secret: the dispatcher's JWKS and issuer only; the agents exchange grants.
  const jwksOnly = await renderValid({ billingTools: { enabled: true } });
  const plainEnv = byName<IDeployment>(jwksOnly, 'Deployment', 'mesh-agent-mesh-billing-tools').spec!.template.spec!.containers[0].env!;
  const dispatcherUrl = `http://${byName<IService>(jwksOnly, 'Service', 'mesh-agent-mesh-dispatcher').metadata!.name}:8080`;
  const plain = Object.fromEntries(plainEnv.map((e) => [e.name, e.value]));
  assert.equal(plain.BILLING_TOOLS_JWKS_URL, `${dispatcherUrl}/.well-known/jwks.json`);
  assert.equal(plain.BILLING_TOOLS_TOKEN_ISSUER, dispatcherUrl);
  assert.ok(!plainEnv.some((e) => e.name === 'BILLING_TOKEN_SECRET'));
  assert.equal(agentsEnv(jwksOnly).AGENTS_TOKEN_URL, `${dispatcherUrl}/oauth/token`);
  await assert.rejects(
    () => chart.render({ billingTools: { enabled: true }, dispatcher: { enabled: false } }),
    (e: Error) => e instanceof RenderFailure && /toolTokenSecret/.test(e.message),
  );

  const ms = await renderValid(withBillingTools);
  const tools = byName<IDeployment>(ms, 'Deployment', 'mesh-agent-mesh-billing-tools');
  const svc = byName<IService>(ms, 'Service', 'mesh-agent-mesh-billing-tools');
  const env = tools.spec!.template.spec!.containers[0].env!;
  // BILLING_TOKEN_SECRET is the Secret's AGENTS_TOOL_TOKEN_SECRET: the key the agents mint with.
  const secretRef = env.find((e) => e.name === 'BILLING_TOKEN_SECRET')?.valueFrom?.secretKeyRef;
  assert.equal(secretRef?.key, 'AGENTS_TOOL_TOKEN_SECRET');
  const secret = ofKind<{ data: Record<string, string> }>(ms, 'Secret').find((m) => m.metadata.name === secretRef?.name)!;
  assert.equal(Buffer.from(secret.data.AGENTS_TOOL_TOKEN_SECRET, 'base64').toString(), withBillingTools.secrets.agents.toolTokenSecret);
  const mcp = JSON.parse(agentsEnv(ms).AGENTS_MCP_SERVERS!) as Record<string, { url: string }>;
  assert.equal(mcp.billing.url, `http://${svc.metadata!.name}:${svc.spec!.ports![0].port}/mcp`);
  // An explicit billing server wins over the chart's.
  const own = await renderValid({ ...withBillingTools, agents: { mcpServers: { billing: { url: 'http://billing.tools:9000/mcp' } } } });
  assert.equal((JSON.parse(agentsEnv(own).AGENTS_MCP_SERVERS!) as Record<string, { url: string }>).billing.url, 'http://billing.tools:9000/mcp');
});

test('the dispatcher and the agents run with the Node flags npm start gives them, by default in the chart', async () => {
  const flags = (await import(pathToFileURL(join(repoRoot, 'scripts/node-flags.mjs')).href)) as Record<string, string[]>;
  const ms = await renderValid();
  for (const [app, own] of [
    ['agents', flags.agentsNodeFlags],
    ['dispatcher', flags.dispatcherNodeFlags],
  ] as const) {
    assert.ok(own.length > 0, app);
    const deployments = ofKind<IDeployment>(ms, 'Deployment').filter((d) => d.metadata.name.includes(`-${app}`));
    assert.ok(deployments.length > 0, app);
    for (const d of deployments) {
      // On the command line: NODE_OPTIONS refuses --min-semi-space-size.
      assert.deepEqual(d.spec!.template.spec!.containers[0].command, ['node', ...own, `apps/${app}/dist/main.js`], d.metadata.name);
    }
  }
  const none = await renderValid({ dispatcher: { nodeFlags: [] } });
  const dispatcher = ofKind<IDeployment>(none, 'Deployment').find((d) => d.metadata.name.includes('-dispatcher'))!;
  assert.deepEqual(dispatcher.spec!.template.spec!.containers[0].command, ['node', 'apps/dispatcher/dist/main.js']);
  await assert.rejects(renderValid({ agents: { nodeFlags: ['--max-semi-space-size=64; rm -rf /'] } }), 'a flag is one token');
});

test('secrets.agents.directoryToken: the agents register their cards in the chart directory', async () => {
  const envOf = (ms: Manifest[]) =>
    Object.fromEntries(ofKind<IDeployment>(ms, 'Deployment').find((d) => d.metadata.name.includes('-agents-'))!.spec!.template.spec!.containers[0].env!.map((e) => [e.name, e.value]));
  assert.equal(envOf(await renderValid()).AGENTS_DIRECTORY_URL, undefined, 'no token, no registration (the agents refuse a URL without one)');
  const ms = await renderValid({ secrets: { agents: { directoryToken: 'team-key-123' } } });
  const directory = byName<IService>(ms, 'Service', 'mesh-agent-mesh-directory');
  assert.equal(envOf(ms).AGENTS_DIRECTORY_URL, `http://${directory.metadata!.name}:${directory.spec!.ports![0].port}`);
  const secret = ofKind<{ data: Record<string, string> }>(ms, 'Secret').find((m) => !isHook(m))!;
  assert.equal(Buffer.from(secret.data.AGENTS_DIRECTORY_TOKEN, 'base64').toString(), 'team-key-123');
  assert.ok('AGENTS_DIRECTORY_URL' in agentsConfigSpec && 'AGENTS_DIRECTORY_TOKEN' in agentsConfigSpec);
});

test('PrometheusRule on: every alert reads metrics and labels the services export, combining replicas with max', async () => {
  assert.equal(ofKind(await renderValid(), 'PrometheusRule').length, 0, 'off by default (needs the CRD)');
  const ms = await renderValid({ metrics: { prometheusRule: { enabled: true, labels: { release: 'prom' }, lagThreshold: 250 } } });
  const [rule] = ofKind<IPrometheusRule>(ms, 'PrometheusRule');
  assert.equal(rule.metadata!.labels!.release, 'prom');
  const exported = new Map(
    (new MeshMetrics({ defaultMetrics: false }).registry.getMetricsAsArray() as unknown as { name: string; labelNames: string[] }[]).map((m) => [m.name, m.labelNames]),
  );
  const rules = rule.spec!.groups!.flatMap((g) => g.rules ?? []);
  const alerts = rules.map((r) => r.alert);
  for (const name of ['MeshDeadLetters', 'MeshCommandsUndeliverable', 'MeshEventsRefused', 'MeshConsumerLagHigh', 'MeshUnknownOutcomesOpen', 'MeshAdmissionRefused', 'MeshTasksNotStarted', 'MeshTasksFailed']) assert.ok(alerts.includes(name), name);
  for (const r of rules) {
    const expr = String(r.expr);
    const metrics = [...expr.matchAll(/\b(mesh_[a-z_]+)\b/g)].map((m) => m[1]);
    assert.ok(metrics.length > 0, `${r.alert} reads a mesh metric`);
    for (const metric of metrics) {
      const labels = exported.get(metric);
      assert.ok(labels, `${r.alert}: ${metric} is a metric the services export`);
      const used = [...expr.matchAll(/by \(([^)]*)\)/g), ...expr.matchAll(/\{([a-z_]+)[!=~]/g)].flatMap((m) => m[1].split(',').map((l) => l.trim()));
      for (const l of used) assert.ok(labels.includes(l), `${r.alert}: ${metric} has the label ${l}`);
    }
    // Gauges of one partition come from every agents replica: summing would multiply them.
    if (/mesh_(consumer_lag|unknown_outcomes_open)/.test(expr)) assert.match(expr, /^max by/, `${r.alert} combines replicas with max`);
    assert.ok(r.labels?.severity, `${r.alert} has a severity`);
  }
  assert.match(String(rules.find((r) => r.alert === 'MeshConsumerLagHigh')!.expr), /> 250$/);
  // Label values the rules match on are ones the services record.
  for (const value of ['not_started', 'expired', 'RATE_LIMITED']) assert.ok(operations.includes(value), `docs/operations.md names ${value}`);
});

test('auth settings go to the Secret; every env variable is one an app reads or a documented contract', async () => {
  const ms = await renderValid({ secrets: { auth: { apiKeys: 'demo-acme=acme:alice', jwtIssuer: 'https://idp', jwtAudience: 'mesh', jwksUrl: 'https://idp/jwks' } } });
  const secret = ofKind<{ data: Record<string, string> }>(ms, 'Secret').find((m) => !isHook(m))!;
  assert.deepEqual(Object.keys(secret.data).sort(), ['AUTH_API_KEYS', 'AUTH_JWKS_URL', 'AUTH_JWT_AUDIENCE', 'AUTH_JWT_ISSUER', 'DATABASE_URL']);
  // The contract docs/charts.md states for the app owners (runtime variables the chart sets).
  for (const name of ['MIGRATE_ONLY', 'DRAIN_TIMEOUT_MS', 'AGENTS_AGENT_IDS', 'LOG_LEVEL'])
    assert.ok(docs.includes(`\`${name}\``), `docs/charts.md documents ${name}`);
  // Read outside the apps' config specs: by @mesh/service (the migration Job), @mesh/telemetry and Node.
  const readElsewhere = ['MIGRATE_ONLY', 'LOG_LEVEL', 'NODE_OPTIONS'];
  const read = new Set([
    ...Object.keys(directoryConfigSpec),
    ...Object.keys(dispatcherConfigSpec),
    ...Object.keys(agentsConfigSpec),
    ...Object.keys(billingToolsConfigSpec),
    ...Object.keys(authSpec),
    ...readElsewhere,
  ]);
  const envNames = ms.flatMap((m) => {
    if (m.kind === 'ConfigMap' || m.kind === 'Secret') return Object.keys((m as unknown as { data: object }).data);
    const pod = (m as Manifest & IDeployment).spec?.template?.spec;
    return pod ? [...(pod.initContainers ?? []), ...pod.containers].flatMap((c) => (c.env ?? []).map((e) => e.name)) : [];
  });
  assert.ok(envNames.length > 10);
  for (const name of envNames) assert.ok(read.has(name), `the chart sets ${name}, which no app reads and the contract does not list`);
});

test('Chart.yaml is a v2 application chart with semver versions, and NOTES.txt names the endpoints', async () => {
  const meta = chart.meta as typeof chart.meta & { apiVersion?: string; type?: string };
  const raw = readFileSync(join(chart.dir, 'Chart.yaml'), 'utf8');
  assert.match(raw, /^apiVersion: v2$/m);
  assert.match(raw, /^type: application$/m);
  assert.equal(meta.name, 'agent-mesh');
  for (const v of [meta.version, meta.appVersion]) assert.match(v, /^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$/);
  const notes = await chart.notes({}, { releaseName: 'prod', namespace: 'mesh' });
  assert.match(notes, /http:\/\/prod-agent-mesh-dispatcher\.mesh\.svc:8080/);
  assert.match(notes, /HPA on CPU/);
  assert.match(await chart.notes({ keda: { enabled: true } }), /KEDA ScaledObjects on consumer lag/);
});

test('docs/charts.md covers install, every top-level value, sizing and drain', async () => {
  for (const key of Object.keys(values)) assert.ok(docs.includes(`\`${key}`), `docs/charts.md mentions the value ${key}`);
  for (const topic of ['helm install', 'lagThreshold', 'partitions', 'terminationGracePeriodSeconds', 'MIGRATE_ONLY', 'values.schema.json']) {
    assert.ok(docs.includes(topic), `docs/charts.md covers ${topic}`);
  }
});

test('the agents ops token and tool-token secret go to the Secret when set, and nowhere when not', async () => {
  const plain = ofKind<{ data: Record<string, string> }>(await renderValid(), 'Secret').find((m) => !isHook(m))!;
  assert.ok(!('AGENTS_OPS_TOKEN' in plain.data) && !('AGENTS_TOOL_TOKEN_SECRET' in plain.data));
  const ms = await renderValid({ secrets: { agents: { opsToken: 'ops-token-123', toolTokenSecret: 'tool-token-secret-123456' } } });
  const secret = ofKind<{ data: Record<string, string> }>(ms, 'Secret').find((m) => !isHook(m))!;
  assert.equal(Buffer.from(secret.data.AGENTS_OPS_TOKEN, 'base64').toString(), 'ops-token-123');
  assert.equal(Buffer.from(secret.data.AGENTS_TOOL_TOKEN_SECRET, 'base64').toString(), 'tool-token-secret-123456');
  // Values the apps would refuse at start are refused at render time.
  await assert.rejects(() => chart.render({ secrets: { agents: { opsToken: 'short' } } }), ValuesSchemaError);
});

test('helm lint --strict passes, and a chart it would fail is reported', async () => {
  const messages = await chart.lint();
  assert.ok(messages.every((m) => !/\[(ERROR|WARNING)\]/.test(m)), messages.join('\n'));
  const dir = mkdtempSync(join(tmpdir(), 'broken-chart-'));
  cpSync(chart.dir, dir, { recursive: true });
  writeFileSync(join(dir, 'Chart.yaml'), readFileSync(join(dir, 'Chart.yaml'), 'utf8').replace(/^version: .*$/m, 'version: not-semver'));
  const broken = new Chart(dir);
  try {
    await assert.rejects(() => broken.lint(), /not-semver/);
  } finally {
    broken.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the dispatcher signs with the key of a Secret mounted read-only, issuer and previous key set; none by default', async () => {
  const dispatcherPod = (ms: Manifest[]) => byName<IDeployment>(ms, 'Deployment', 'mesh-agent-mesh-dispatcher').spec!.template.spec!;
  const envOf = (ms: Manifest[]) => Object.fromEntries(dispatcherPod(ms).containers[0].env!.map((e) => [e.name, e.value]));
  const plain = await renderValid();
  assert.equal(envOf(plain).DISPATCHER_SIGNING_KEY_FILE, undefined);
  assert.equal(envOf(plain).DISPATCHER_ISSUER, 'http://mesh-agent-mesh-dispatcher:8080');
  assert.ok(!dispatcherPod(plain).volumes!.some((v) => v.name === 'signing-key'));
  const ms = await renderValid({
    dispatcher: { issuer: 'https://a2a.example.com', signingKey: { secretName: 'mesh-signing', key: 'current.pem', previousKey: 'previous.pem' } },
    billingTools: { enabled: true },
  });
  const env = envOf(ms);
  assert.equal(env.DISPATCHER_ISSUER, 'https://a2a.example.com');
  assert.equal(env.DISPATCHER_SIGNING_KEY_FILE, '/etc/agent-mesh/signing/current.pem');
  assert.equal(env.DISPATCHER_SIGNING_KEY_PREVIOUS_FILE, '/etc/agent-mesh/signing/previous.pem');
  const pod = dispatcherPod(ms);
  assert.deepEqual(pod.volumes!.find((v) => v.name === 'signing-key')?.secret, { secretName: 'mesh-signing', defaultMode: 0o400 });
  assert.deepEqual(
    pod.containers[0].volumeMounts!.find((m) => m.name === 'signing-key'),
    { name: 'signing-key', mountPath: '/etc/agent-mesh/signing', readOnly: true },
  );
  const billing = byName<IDeployment>(ms, 'Deployment', 'mesh-agent-mesh-billing-tools').spec!.template.spec!.containers[0].env!;
  assert.equal(billing.find((e) => e.name === 'BILLING_TOOLS_TOKEN_ISSUER')?.value, 'https://a2a.example.com', 'the tool server expects the same issuer');
});
