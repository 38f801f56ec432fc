export { loadConfig, type ConfigOf, port, positiveInt, flag } from './config-loader.js';
export { topicDefinitions, kafkaCredentials, kafkaSpec, databaseSpec, httpSpec } from './areas.js';
