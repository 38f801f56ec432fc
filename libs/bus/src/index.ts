export * from './kafka-client.js';
