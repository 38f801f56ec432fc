import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { nextNoteServer, NoteBook } from './note-book.js';

// A 2.x tool server over stdio for the gateway's revision tests; `strict` serves 2026-07-28 only.
const book = new NoteBook();
serveStdio(() => nextNoteServer(book), { legacy: process.argv[2] === 'strict' ? 'reject' : 'serve' });
