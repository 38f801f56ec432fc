/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or undefined. The scheme
 * is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are Bearer too. The token is a
 * token68 of at most 8 KiB; anything else (another scheme, a space inside, nothing) is no token.
 */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer +([A-Za-z0-9._~+/=-]{1,8192})$/i.exec(header ?? '')?.[1];
}
