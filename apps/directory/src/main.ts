import { runMain } from '@mesh/service';
import { loadDirectoryConfig } from './config/directory.config.js';
import { startDirectory } from './directory.app.js';

runMain('directory', async () => startDirectory(loadDirectoryConfig()));
