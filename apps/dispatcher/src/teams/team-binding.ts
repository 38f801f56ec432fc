import { z } from 'zod';
import { isAgentId } from '@mesh/contract';

/** A public Ed25519 JWK with its `kid`: what a team's events are verified with. */
export interface TeamEventKey {
  kty: 'OKP';
  crv: 'Ed25519';
  kid: string;
  x: string;
}

/** A team's binding as stored: its agents, event keys and tool audiences. */
export interface TeamBinding {
  name: string;
  tenant: string;
  agents: string[];
  eventKeys: { keys: TeamEventKey[] };
  toolAudiences: string[];
  kafkaPrincipal: string | null;
  createdAt: string;
  revokedAt: string | null;
}

/** A binding as `GET /ops/teams` lists it: key ids, never the keys. */
export type TeamView = Omit<TeamBinding, 'eventKeys'> & { keyIds: string[] };

export function viewOf(team: TeamBinding): TeamView {
  const { eventKeys, ...rest } = team;
  return { ...rest, keyIds: eventKeys.keys.map((k) => k.kid) };
}

/** Team names: what `team-<name>` principals and `mesh_team_<name>` databases are made of. */
export const TEAM_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const TENANT = /^[a-z0-9][a-z0-9-]{0,62}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

const publicKey = z
  .object({
    kty: z.literal('OKP', { error: 'kty must be "OKP" (an Ed25519 key)' }),
    crv: z.literal('Ed25519', { error: 'crv must be "Ed25519"' }),
    kid: z.string().min(1).max(200),
    // 32 bytes, base64url without padding.
    x: z.string().length(43).regex(BASE64URL, 'x must be base64url'),
  })
  .loose()
  .refine((k) => !('d' in k), { message: 'a private key (d) must never be sent: give the public half only', path: ['d'] })
  .transform(({ kty, crv, kid, x }): TeamEventKey => ({ kty, crv, kid, x }));

/** The body of `PUT /ops/teams/:name`. */
export const teamBindingBody = z
  .object({
    tenant: z.string().regex(TENANT, 'tenant must be a lower-case slug'),
    agents: z
      .array(z.string().refine(isAgentId, 'each agent must be an agent id (lower-case slug)'))
      .min(1)
      .max(100)
      .refine((a) => new Set(a).size === a.length, 'agents must not repeat'),
    eventKeys: z.object({
      keys: z
        .array(publicKey)
        .min(1)
        .max(10)
        .refine((keys) => new Set(keys.map((k) => k.kid)).size === keys.length, 'key ids must not repeat'),
    }),
    toolAudiences: z.array(z.string().min(1).max(200)).max(100).default([]),
    kafkaPrincipal: z
      .string()
      .regex(/^User:[A-Za-z0-9._-]{1,200}$/, 'kafkaPrincipal must look like User:<name>')
      .optional(),
  })
  .strict();

export type TeamBindingInput = z.infer<typeof teamBindingBody>;
