import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpException } from '@nestjs/common';
import type { Request } from 'express';
import { checkTeamsCredential } from './teams.controller.js';

const TOKEN = 'ops-token-for-teams';

function request(...authorization: string[]): Request {
  const rawHeaders = authorization.flatMap((v) => ['Authorization', v]);
  return {
    rawHeaders,
    header: (name: string) => (name.toLowerCase() === 'authorization' ? authorization[0] : undefined),
  } as unknown as Request;
}

function refusal(req: Request, token: string | undefined): { status: number; error: string } | undefined {
  try {
    checkTeamsCredential(req, token);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof HttpException);
    return { status: err.getStatus(), error: (err.getResponse() as { error: string }).error };
  }
}

test('the ops token is required: without the setting 503 naming it, a missing, wrong or repeated credential 401', () => {
  assert.equal(refusal(request(`Bearer ${TOKEN}`), TOKEN), undefined);
  const off = refusal(request(`Bearer ${TOKEN}`), undefined);
  assert.equal(off?.status, 503);
  assert.match(off!.error, /set DISPATCHER_OPS_TOKEN/);
  assert.equal(refusal(request(), TOKEN)?.status, 401);
  assert.equal(refusal(request('Bearer wrong-token-of-same'), TOKEN)?.status, 401);
  assert.equal(refusal(request(`Basic ${TOKEN}`), TOKEN)?.status, 401);
  assert.equal(refusal(request(`Bearer ${TOKEN}`, 'Bearer other'), TOKEN)?.status, 401);
});
