export type { Principal } from './principal.js';
export { type AuthenticatorOptions, AuthError, Authenticator } from './authenticator.js';
export { loadAuthOptions, authSpec, DEMO_API_KEYS } from './auth.config.js';
