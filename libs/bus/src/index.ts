export {
  createKafka,
  assertKafkaReachable,
  kafkaStartError,
  saslFromEnv,
  KafkaProbe,
  logLevel,
  type Admin,
  type Consumer,
  type Kafka,
  type Producer,
} from './kafka-client.js';
export {
  ensureTopics,
  awaitTopics,
  type TopicWait,
  type LagReport,
  BusAdmin,
  type GroupDescription,
  type GroupMember,
} from './bus-admin.js';
export { type BusProducerOptions, BusProducer } from './bus-producer.js';
export {
  AclResourceTypes,
  AclOperationTypes,
  AclPermissionTypes,
  ResourcePatternTypes,
  type AclEntry,
  type AclFilter,
} from './kafka-acls.js';
export type { EnvelopeHandler, BusConsumerOptions, DeadLettered, DeadLetterReason, KeyedRecord, MessageContext } from './consumer-types.js';
export { DEAD_LETTER_REASONS } from './consumer-types.js';
export { BusConsumer } from './bus-consumer.js';
export { IntervalCommitter } from './interval-committer.js';
export { runSupervised, type ConsumerSupervisorOptions } from './consumer-supervisor.js';
export {
  TopicReader,
  endOffsets,
  type TopicReaderOptions,
  type TopicReaderHandler,
  type TopicRecord,
  type TopicBatch,
} from './topic-reader.js';
export {
  deadLetterTopic,
  replayDeadLetters,
  replayGroupId,
  readDeadLetters,
  countDeadLetters,
  DeadLetterHeaders,
  type DeadLetterCounter,
  type DeadLetterRecord,
  type ReadDeadLettersOptions,
  type ReplayOptions,
} from './dead-letters.js';
export {
  BusBatchContext,
  BusContext,
  KafkaBusTransport,
  BusExceptionFilter,
  KEYED_BATCH_PATTERN,
  type KafkaBusTransportOptions,
} from './bus-transport.js';
export { isTransientKafkaError, isRecordRefusedError } from './transient-errors.js';
export { recordBatchBytes, KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from './record-size.js';
export { partitionOfKey } from './key-partitioner.js';
