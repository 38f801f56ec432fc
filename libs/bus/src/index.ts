export * from './kafka-client.js';
export * from './bus-admin.js';
export * from './bus-producer.js';
export * from './bus-consumer.js';
export * from './dead-letters.js';
export * from './offset-tracker.js';
export * from './key-queues.js';
export * from './in-flight-slots.js';
