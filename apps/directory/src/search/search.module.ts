import { Module } from '@nestjs/common';
import { RegistryModule } from '../registry/registry.module.js';
import { SearchController } from './search.controller.js';
import { SearchService } from './search.service.js';

/** Ranked full-text and filtered search over visible agents. */
@Module({ imports: [RegistryModule], controllers: [SearchController], providers: [SearchService] })
export class SearchModule {}
