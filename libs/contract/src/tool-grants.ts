import type { ActorClaim } from './delegation.js';

/**
 * What the dispatcher, the workers and the tool servers agree on about grants and tool tokens
 * (docs/agents.md, "Tool tokens"): a run command's grant is exchanged (RFC 8693) at the
 * dispatcher's token endpoint for a token bound to one tool server (RFC 8707 `resource`).
 */
export const ToolGrants = {
  /** Path of the token endpoint on the dispatcher. */
  tokenPath: '/oauth/token',
  /** Path of the dispatcher's public keys. */
  jwksPath: '/.well-known/jwks.json',
  /** RFC 8693 grant type of the exchange. */
  grantType: 'urn:ietf:params:oauth:grant-type:token-exchange',
  /** RFC 8693 `subject_token_type` of a grant. */
  jwtTokenType: 'urn:ietf:params:oauth:token-type:jwt',
  /** RFC 8693 `issued_token_type` of a tool call token (the default `requested_token_type`). */
  accessTokenType: 'urn:ietf:params:oauth:token-type:access_token',
  /** `requested_token_type` of a connection token: opens an MCP session, names the agent and no tenant. */
  connectionTokenType: 'urn:agent-mesh:params:oauth:token-type:connection',
  /** JOSE `typ` of a grant: never accepted where an access token is expected, nor the reverse. */
  grantTyp: 'mesh-grant+jwt',
  /** JOSE `typ` of an issued token (RFC 9068). */
  accessTokenTyp: 'at+jwt',
  /** Longest life of an issued token, in seconds (it also ends with its grant). */
  accessTokenTtlS: 60,
} as const;

/** The claims of a grant (JWT payload). */
export interface GrantClaims {
  iss: string;
  /** The token endpoint's URL: a grant is good for nothing else. */
  aud: string;
  sub: string;
  tenant: string;
  /** RFC 8693 actor chain the task carries (the caller's client innermost). */
  act: ActorClaim;
  agent_id: string;
  task_id: string;
  execution_id: string;
  /** Space-separated scopes of the task, when it has any. */
  scope?: string;
  jti: string;
  iat: number;
  exp: number;
}

/** The agent as an actor (`act.sub`) and as the subject of a connection token. */
export const agentActor = (agentId: string) => `agent:${agentId}`;
