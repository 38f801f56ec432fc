/** Who is calling: the result of authentication, the only source of tenant and subject. */
export interface Principal {
  tenant: string;
  /** End user the caller acts for (JWT `sub`). */
  subject: string;
  /** Calling client or agent (JWT `act.sub`, or the API key's name). */
  actor: string;
  scopes: string[];
}
