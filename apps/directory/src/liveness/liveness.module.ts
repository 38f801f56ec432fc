import { Module } from '@nestjs/common';
import { RegistryModule } from '../registry/registry.module.js';
import { HeartbeatController } from './heartbeat.controller.js';
import { LivenessService } from './liveness.service.js';

/** Heartbeats over HTTP (and the service the Kafka heartbeat consumer writes through). */
@Module({ imports: [RegistryModule], controllers: [HeartbeatController], providers: [LivenessService], exports: [LivenessService] })
export class LivenessModule {}
