import { Global, Module, type DynamicModule } from '@nestjs/common';
import { CARD_STREAM } from '../common/tokens.js';
import type { CardStream } from './card-stream.port.js';
import { CardOutbox } from './card-outbox.js';

/** The Kafka side of registration (command topics, cards topic) and its outbox publisher. */
@Global()
@Module({})
export class CardStreamModule {
  static forStream(stream: CardStream, outbox: CardOutbox): DynamicModule {
    return {
      module: CardStreamModule,
      providers: [
        { provide: CARD_STREAM, useValue: stream },
        { provide: CardOutbox, useValue: outbox },
      ],
      exports: [CARD_STREAM, CardOutbox],
    };
  }
}
