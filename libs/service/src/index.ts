export { runMain } from './run-main.js';
export { type HealthProbe, ServiceLifecycle, HealthModule } from './health.js';
export {
  authenticateBeforeBody,
  countRequests,
  hasBody,
  refuseMalformedUtf8,
  startHttpService,
  type BodyAuthentication,
  type RoutePrefix,
} from './http-service.js';
export { PeriodicTask } from './periodic-task.js';
export { CLUSTER_STOP_MESSAGE, runClusterPrimary, type ClusterPrimary, type ClusterPrimaryOptions } from './cluster-primary.js';
