export * from './principal.js';
export * from './authenticator.js';
export * from './auth.config.js';
