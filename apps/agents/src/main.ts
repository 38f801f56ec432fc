import { runMain } from '@mesh/service';
import { startTelemetry } from '@mesh/telemetry';
import { loadAgentsConfig } from './config/agents.config.js';
import { startAgents } from './agents.app.js';

// Tracing before anything connects (ESM imports above are hoisted anyway; startTelemetry patches kafkajs itself).
startTelemetry({ serviceName: 'agents' });

runMain('agents', async () => startAgents(loadAgentsConfig()));
