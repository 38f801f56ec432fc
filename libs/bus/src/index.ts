export * from './kafka-client.js';
export * from './bus-admin.js';
export * from './bus-producer.js';
