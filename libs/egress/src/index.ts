export { EgressRefused, EgressPolicy } from './egress-policy.js';
export { PinnedHttpClient } from './pinned-http.js';
