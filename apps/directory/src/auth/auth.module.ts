import { Global, Module, type DynamicModule } from '@nestjs/common';
import { Authenticator, type AuthenticatorOptions } from '@mesh/auth';
import { AuthGuard } from './auth.guard.js';

/** Provides the Authenticator and the guard every API route uses. */
@Global()
@Module({})
export class AuthModule {
  static forOptions(options: AuthenticatorOptions): DynamicModule {
    return {
      module: AuthModule,
      providers: [{ provide: Authenticator, useValue: new Authenticator(options) }, AuthGuard],
      exports: [Authenticator, AuthGuard],
    };
  }
}
