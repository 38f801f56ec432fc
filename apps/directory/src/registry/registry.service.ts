import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { AgentCard } from '@a2a-js/sdk';
import { DEFAULT_CHANNEL_KEY_TEMPLATE, slugify, TopicNames } from '@mesh/contract';
import type { Principal } from '@mesh/auth';
import type { Logger } from '@mesh/telemetry';
import { CARD_STREAM, DATA_SOURCE, DIRECTORY_CONFIG, LOGGER } from '../common/tokens.js';
import { DirectoryError } from '../common/directory.exception.js';
import type { DirectoryConfig } from '../config/directory.config.js';
import type { CardStream } from '../card-stream/card-stream.port.js';
import { CardOutbox } from '../card-stream/card-outbox.js';
import { CardVerifier } from '../signatures/card-verifier.js';
import { AgentEntity } from './agent.entity.js';
import { AgentVersionEntity } from './agent-version.entity.js';
import { agentView, assertOwner, assertVisible, type AgentView } from './agent.view.js';
import { registrySchemas, parseOrThrow, type RegisterBody, type UpdateBody } from './registry.schemas.js';
import { REGISTRATION_LIMITER, type RateLimiter } from './registration-limiter.token.js';

type Card = RegisterBody['card'];

/** Columns derived from a card for search; written with the card in the same statement. */
function derived(card: Card) {
  const skills = card.skills;
  const uniq = (xs: string[]) => [...new Set(xs)];
  return {
    skillIds: uniq(skills.map((s) => s.id)),
    skillTags: uniq(skills.flatMap((s) => s.tags.map((t) => t.toLowerCase()))),
    inputModes: uniq([...card.defaultInputModes, ...skills.flatMap((s) => s.inputModes ?? [])]),
    outputModes: uniq([...card.defaultOutputModes, ...skills.flatMap((s) => s.outputModes ?? [])]),
    skillText: skills.map((s) => `${s.name}. ${s.tags.join(' ')}. ${s.description}`).join('\n'),
    examplesText: skills.flatMap((s) => s.examples ?? []).join('\n'),
  };
}

// Ranked document: name (A) > description (B) > skill names, tags and descriptions (C) > examples (D).
const SEARCH_DOCUMENT = `setweight(to_tsvector('english', $N), 'A') || setweight(to_tsvector('english', $D), 'B')
  || setweight(to_tsvector('english', $S), 'C') || setweight(to_tsvector('english', $E), 'D')`;
/** The document expression with its four texts bound to the given parameter positions. */
const searchDocument = (n: number, d: number, s: number, e: number) => {
  const at: Record<string, number> = { N: n, D: d, S: s, E: e };
  return SEARCH_DOCUMENT.replace(/\$([NDSE])/g, (_, k: string) => `$${at[k]}`);
};

/** Register, update, retire and read agents; every write is one transaction plus an outbox flush. */
@Injectable()
export class RegistryService {
  private readonly schemas;
  private readonly log: Logger;
  readonly topics: TopicNames;

  constructor(
    @Inject(DATA_SOURCE) private readonly ds: DataSource,
    @Inject(DIRECTORY_CONFIG) private readonly config: DirectoryConfig,
    @Inject(CARD_STREAM) private readonly stream: CardStream,
    @Inject(CardOutbox) private readonly outbox: CardOutbox,
    @Inject(CardVerifier) private readonly verifier: CardVerifier,
    @Inject(REGISTRATION_LIMITER) private readonly limiter: RateLimiter,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ src: 'registry' });
    this.schemas = registrySchemas(config.DIRECTORY_MAX_PARTITIONS);
    this.topics = new TopicNames(config.TOPIC_PREFIX);
  }

  view(a: AgentEntity, viewer: Principal): AgentView {
    return agentView(a, viewer, this.topics.commands(a.id));
  }

  private rateLimit(tenant: string): void {
    const wait = this.limiter.take(tenant);
    if (wait > 0) {
      throw new DirectoryError('RATE_LIMITED', `too many registrations for tenant "${tenant}"; retry in ${wait} s`, [], {
        retryAfterSec: wait,
      });
    }
  }

  /** Validates, checks signatures, and returns the card in the SDK's normalised A2A 1.0 JSON. */
  private async acceptCard(tenant: string, card: Card): Promise<Record<string, unknown>> {
    const sdkCard = AgentCard.fromJSON(card);
    await this.verifier.check(tenant, sdkCard);
    return AgentCard.toJSON(sdkCard) as Record<string, unknown>;
  }

  async register(viewer: Principal, body: unknown): Promise<AgentView> {
    this.rateLimit(viewer.tenant);
    const req = parseOrThrow(this.schemas.register, body, 'registration');
    const id = req.id ?? slugify(req.card.name);
    const card = await this.acceptCard(viewer.tenant, req.card);
    const keyTemplate = req.channel?.keyTemplate ?? DEFAULT_CHANNEL_KEY_TEMPLATE;
    const partitions = req.channel?.partitions ?? this.config.DIRECTORY_DEFAULT_PARTITIONS;
    const visibility = req.visibility ?? 'tenant';

    // Ids are global (they name Kafka topics); the message never says who holds a taken id.
    const conflict = () =>
      new DirectoryError('CONFLICT', `agent id "${id}" is not available; choose another "id"`, [
        { field: req.id ? 'id' : 'card.name', message: 'id taken' },
      ]);
    if (await this.ds.getRepository(AgentEntity).existsBy({ id })) throw conflict();

    // Order: everything validated above, then the rows (inside the transaction, so Postgres has
    // accepted them), then the command topic, then the commit. A refused request creates nothing;
    // if Kafka refuses, the rows roll back; only a failing commit could leave an empty topic,
    // which the next registration of the id reuses.
    const d = derived(req.card);
    const saved = await this.ds.transaction(async (m) => {
      const inserted: unknown[] = await m.query(
        `INSERT INTO directory.agent (id, tenant, visibility, version, card, channel_key_template, partitions,
           skill_ids, skill_tags, input_modes, output_modes, registered_by, search_document)
         VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $8, $9, $10, $11, ${searchDocument(12, 13, 14, 15)})
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [
          id,
          viewer.tenant,
          visibility,
          card,
          keyTemplate,
          partitions,
          d.skillIds,
          d.skillTags,
          d.inputModes,
          d.outputModes,
          viewer.subject,
          req.card.name,
          req.card.description,
          d.skillText,
          d.examplesText,
        ],
      );
      if (inserted.length === 0) throw conflict();
      await this.insertVersion(m, id, 1, card, keyTemplate, partitions, visibility, viewer.subject);
      await this.topicStep(id, () => this.stream.ensureCommandTopic(id, partitions));
      return m.getRepository(AgentEntity).findOneByOrFail({ id });
    });
    await this.outbox.flush();
    return this.view(saved, viewer);
  }

  async update(viewer: Principal, id: string, body: unknown): Promise<AgentView> {
    this.rateLimit(viewer.tenant);
    const req: UpdateBody = parseOrThrow(this.schemas.update, body, 'update');
    const card = await this.acceptCard(viewer.tenant, req.card);
    const saved = await this.ds.transaction(async (m) => {
      const current = await this.lockForChange(m, viewer, id);
      const keyTemplate = req.channel?.keyTemplate ?? current.channelKeyTemplate;
      const partitions = req.channel?.partitions ?? current.partitions;
      if (partitions < current.partitions) {
        throw new DirectoryError('VALIDATION_FAILED', 'invalid update: channel.partitions', [
          { field: 'channel.partitions', message: `cannot shrink from ${current.partitions} (Kafka partitions only grow)` },
        ]);
      }
      const visibility = req.visibility ?? current.visibility;
      const version = current.version + 1;
      const d = derived(req.card);
      await m.query(
        `UPDATE directory.agent SET version = $2, card = $3, channel_key_template = $4, partitions = $5, visibility = $6,
           skill_ids = $7, skill_tags = $8, input_modes = $9, output_modes = $10, search_document = ${searchDocument(11, 12, 13, 14)},
           updated_at = now(), revision = revision + 1
         WHERE id = $1`,
        [
          id,
          version,
          card,
          keyTemplate,
          partitions,
          visibility,
          d.skillIds,
          d.skillTags,
          d.inputModes,
          d.outputModes,
          req.card.name,
          req.card.description,
          d.skillText,
          d.examplesText,
        ],
      );
      await this.insertVersion(m, id, version, card, keyTemplate, partitions, visibility, viewer.subject);
      // Grown last, once Postgres accepted the rows: a Kafka refusal rolls them back.
      if (partitions > current.partitions) await this.topicStep(id, () => this.stream.ensureCommandTopic(id, partitions));
      return m.getRepository(AgentEntity).findOneByOrFail({ id });
    });
    await this.outbox.flush();
    return this.view(saved, viewer);
  }

  /** Retire: no new tasks (dispatchers see `retired: true`); the row and its versions stay. */
  async retire(viewer: Principal, id: string): Promise<AgentView> {
    const saved = await this.ds.transaction(async (m) => {
      const current = await this.lockForChange(m, viewer, id, { allowRetired: true });
      if (current.retiredAt === null) {
        await m.query(`UPDATE directory.agent SET retired_at = now(), updated_at = now(), revision = revision + 1 WHERE id = $1`, [id]);
      }
      return m.getRepository(AgentEntity).findOneByOrFail({ id });
    });
    await this.outbox.flush();
    return this.view(saved, viewer);
  }

  async get(viewer: Principal, id: string): Promise<AgentEntity> {
    return assertVisible(id, await this.ds.getRepository(AgentEntity).findOneBy({ id }), viewer);
  }

  /**
   * The versions the viewer may see, newest first. Visibility is per version: another tenant sees
   * only versions that were `public` when written (a card once `tenant` or `private` stays the
   * owner's even after the agent became public), and only while the agent itself is visible to it.
   */
  async versions(viewer: Principal, id: string): Promise<{ owner: boolean; versions: AgentVersionEntity[] }> {
    const agent = await this.get(viewer, id);
    const owner = agent.tenant === viewer.tenant;
    const versions = await this.ds
      .getRepository(AgentVersionEntity)
      .find({ where: owner ? { agentId: id } : { agentId: id, visibility: 'public' }, order: { version: 'DESC' } });
    return { owner, versions };
  }

  /** One version, under the same per-version visibility as {@link versions}; 404 otherwise. */
  async version(viewer: Principal, id: string, version: number): Promise<{ owner: boolean; version: AgentVersionEntity }> {
    const agent = await this.get(viewer, id);
    const owner = agent.tenant === viewer.tenant;
    const v = await this.ds.getRepository(AgentVersionEntity).findOneBy({ agentId: id, version });
    // Another tenant cannot tell a version it may not see from one that does not exist.
    if (!v || (!owner && v.visibility !== 'public')) throw new DirectoryError('NOT_FOUND', `agent "${id}" has no version ${version}`);
    return { owner, version: v };
  }

  /** A Kafka admin step of a change: failure means 503 and nothing stored. */
  private async topicStep(id: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (cause) {
      this.log.error({ agentId: id, err: String(cause) }, 'command topic step failed');
      throw new DirectoryError('UNAVAILABLE', `could not create or grow the command topic: ${String(cause)}`, [], {
        cause,
        retryAfterSec: 5,
      });
    }
  }

  private async lockForChange(
    m: EntityManager,
    viewer: Principal,
    id: string,
    opts: { allowRetired?: boolean } = {},
  ): Promise<AgentEntity> {
    const current = assertVisible(
      id,
      await m.getRepository(AgentEntity).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } }),
      viewer,
    );
    assertOwner(id, current, viewer);
    if (current.retiredAt !== null && !opts.allowRetired)
      throw new DirectoryError('CONFLICT', `agent "${id}" is retired and cannot change`);
    return current;
  }

  private async insertVersion(
    m: EntityManager,
    id: string,
    version: number,
    card: Record<string, unknown>,
    keyTemplate: string,
    partitions: number,
    visibility: string,
    by: string,
  ): Promise<void> {
    await m.query(
      `INSERT INTO directory.agent_version (agent_id, version, card, channel_key_template, partitions, visibility, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [id, version, card, keyTemplate, partitions, visibility, by],
    );
  }
}
