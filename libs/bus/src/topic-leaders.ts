import { sleep } from '@mesh/contract';
import type { Admin } from 'kafkajs';

/**
 * Polls metadata until a topic has at least `partitions` partitions, each with a leader. kafkajs'
 * `waitForLeaders` (and a subscribe right after creation) can fail with a transient
 * UNKNOWN_TOPIC_OR_PARTITION on a busy KRaft broker; this retries those, for up to a minute
 * (a broker holding thousands of partitions can take that long under load).
 */
export async function awaitTopicLeaders(admin: Admin, topic: string, partitions: number, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (let delay = 25; ; delay = Math.min(delay * 2, 500)) {
    try {
      const [meta] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
      if (meta && meta.partitions.length >= partitions && meta.partitions.every((p) => p.leader >= 0)) return;
    } catch (err) {
      if (!(err as { retriable?: boolean }).retriable) throw err;
    }
    if (Date.now() > until) throw new Error(`topic ${topic} has no leaders after ${timeoutMs} ms`);
    await sleep(delay);
  }
}
