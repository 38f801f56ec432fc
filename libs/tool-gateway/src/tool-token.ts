import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';

/** Mints short-lived tokens bound to one tool server's audience; never forwards the caller's own token. */
export interface ToolTokenMinter {
  mint(claims: { audience: string; tenant: string; subject: string; taskId: string }): Promise<string>;
}

/** HS256 minter with a secret shared between the worker and the tool servers that want tokens. */
export class HmacToolTokenMinter implements ToolTokenMinter {
  private readonly key: Uint8Array;

  constructor(
    secret: string,
    private readonly issuer = 'agent-mesh-agents',
    private readonly ttlSeconds = 60,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  async mint(c: { audience: string; tenant: string; subject: string; taskId: string }): Promise<string> {
    return new SignJWT({ tenant: c.tenant, task_id: c.taskId })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(this.issuer)
      .setAudience(c.audience)
      .setSubject(c.subject)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
  }
}

/** Tool-server side: verifies a token minted by HmacToolTokenMinter for `audience`. */
export async function verifyToolToken(
  token: string,
  secret: string,
  audience: string,
  issuer = 'agent-mesh-agents',
): Promise<{ tenant: string; subject: string }> {
  const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), { audience, issuer, algorithms: ['HS256'] });
  if (typeof payload.tenant !== 'string' || typeof payload.sub !== 'string') throw new Error('token lacks tenant or subject');
  return { tenant: payload.tenant, subject: payload.sub };
}
