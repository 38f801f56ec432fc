// Child process of bench/dispatch.mjs: registers the demo echo-agent and runs its echo worker in
// its own process, as a real worker would run, so the dispatcher's event loop serves only the
// dispatcher. The agent and its worker are the test fixture test/support/demo-echo-agent.ts (built
// into test/dist by `npm run build`).
import { createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { kafkaBrokers } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
const { registerDemoAgent, startDemoEchoWorker } = await import(`${root}test/dist/support/demo-echo-agent.js`);
const kafka = createKafka({ brokers: kafkaBrokers(), clientId: 'bench-echo-worker' });
const topics = new TopicNames(process.env.TOPIC_PREFIX ?? '');
await registerDemoAgent(kafka, topics);
const worker = await startDemoEchoWorker(kafka, topics);
process.stdout.write('ready\n');
const stop = async () => {
  await worker.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
