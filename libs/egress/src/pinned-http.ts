import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { EgressPolicy, EgressRefused, type CheckedTarget } from './egress-policy.js';

export interface PinnedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface PinnedRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
  /** Largest response body read, in bytes; the rest is discarded. */
  maxResponseBytes?: number;
}

/**
 * HTTP(S) client for user-given URLs: checks the URL with the egress policy, then connects to the
 * address checked (the DNS answer is pinned, so a rebinding name cannot switch to a private
 * address between check and connect) and never follows redirects.
 */
export class PinnedHttpClient {
  constructor(private readonly policy: EgressPolicy) {}

  async request(rawUrl: string, req: PinnedRequest = {}): Promise<PinnedResponse> {
    const target = await this.policy.check(rawUrl);
    return send(target, req);
  }
}

function send(target: CheckedTarget, req: PinnedRequest): Promise<PinnedResponse> {
  const lookup: LookupFunction = (_host, opts, cb) => {
    if ((opts as { all?: boolean }).all)
      (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    else cb(null, target.address, target.family);
  };
  const mod = target.url.protocol === 'https:' ? https : http;
  const limit = req.maxResponseBytes ?? 64 * 1024;
  return new Promise((resolve, reject) => {
    const r = mod.request(
      target.url,
      { method: req.method ?? 'POST', headers: req.headers, lookup, timeout: req.timeoutMs ?? 10000, agent: false },
      (res) => {
        let body = '';
        let size = 0;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          size += Buffer.byteLength(chunk);
          if (size <= limit) body += chunk;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 300 && status < 400) {
            reject(new EgressRefused(`redirect (${status}) not followed`));
            return;
          }
          resolve({ status, headers: res.headers, body });
        });
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`request timed out after ${req.timeoutMs ?? 10000} ms`)));
    r.on('error', reject);
    if (req.body !== undefined) r.write(req.body);
    r.end();
  });
}
