export * from './egress-policy.js';
export * from './pinned-http.js';
