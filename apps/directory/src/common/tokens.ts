/** Injection tokens of values built before Nest starts (config, data source, Kafka adapters). */
export const DIRECTORY_CONFIG = Symbol('DIRECTORY_CONFIG');
export const DATA_SOURCE = Symbol('DATA_SOURCE');
export const CARD_STREAM = Symbol('CARD_STREAM');
export const LOGGER = Symbol('LOGGER');
