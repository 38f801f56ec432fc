export * from './database-bootstrap.js';
