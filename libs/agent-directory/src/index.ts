export { AgentCatalog } from './agent-catalog.js';
