import { Module, type DynamicModule } from '@nestjs/common';
import { HealthModule, type HealthProbe } from '@mesh/service';

/** Root module of the dispatcher. */
@Module({})
export class AppModule {
  static forRoot(probes: HealthProbe[]): DynamicModule {
    return { module: AppModule, imports: [HealthModule.forProbes(probes)] };
  }
}
