export { runCli } from './cli.js';
export { ExitCode } from './cli-error.js';
export { textMessage } from './a2a-client.js';
export { startConsole } from './console/console-server.js';
export { localEnvPath, localSecrets, readLocalEnv, writeLocalEnv, LOCAL_SECRETS } from './local-env.js';
export { teamNames, type TeamNames } from './teams/team-names.js';
export { teamAcls, teamEventsTopic, type TeamAcl } from './teams/team-acls.js';
export { scramUserExists, saltedPassword, SCRAM_ITERATIONS } from './teams/kafka-principal.js';
