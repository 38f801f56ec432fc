import { runMain } from '@mesh/service';
import { loadDispatcherConfig } from './config/dispatcher.config.js';
import { startDispatcher } from './dispatcher.app.js';

runMain('dispatcher', async () => startDispatcher(loadDispatcherConfig()));
