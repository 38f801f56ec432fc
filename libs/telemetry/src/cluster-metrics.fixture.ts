// A cluster worker's side of `clusterMetrics`, forked by cluster-metrics.spec.ts: it asks its
// parent (standing in for the cluster primary) and reports what it got back.
import { Registry } from 'prom-client';
import { clusterMetrics, shareWithCluster } from './cluster-metrics.js';

shareWithCluster(new Registry());
clusterMetrics(Number(process.argv[2])).then(
  (text) => process.send!({ result: text }),
  (err: Error) => process.send!({ failed: err.message }),
);
