export { runMain } from './run-main.js';
export { type HealthProbe, ServiceLifecycle, HealthModule } from './health.js';
export {
  authenticateBeforeBody,
  countRequests,
  limitRequestTimes,
  startHttpService,
  type BodyAuthentication,
  type RoutePrefix,
} from './http-service.js';
export {
  closeUnreadBodies,
  declaredLength,
  deferContinue,
  hasBody,
  isEncoded,
  parseByteSize,
  refuseMalformedUtf8,
  withinBodyLimit,
} from './request-body.js';
export { serveInOrder } from './request-order.js';
export { PeriodicTask } from './periodic-task.js';
export { CLUSTER_STOP_MESSAGE, runClusterPrimary, type ClusterPrimary, type ClusterPrimaryOptions } from './cluster-primary.js';
