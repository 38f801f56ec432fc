// Child process of bench/dispatch.mjs: the demo echo worker in its own process, as a real worker
// would run, so the dispatcher's event loop serves only the dispatcher.
import { createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { startDemoEchoWorker } from '@mesh/app-dispatcher';

const kafka = createKafka({ brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','), clientId: 'bench-echo-worker' });
const worker = await startDemoEchoWorker(kafka, new TopicNames(process.env.TOPIC_PREFIX ?? ''));
process.stdout.write('ready\n');
const stop = async () => {
  await worker.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
