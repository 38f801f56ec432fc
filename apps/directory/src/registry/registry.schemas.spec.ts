import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DirectoryError } from '../common/directory.exception.js';
import { fieldPath, parseOrThrow, registrySchemas } from './registry.schemas.js';

test('field paths read like the JSON they point into', () => {
  assert.equal(fieldPath(['card', 'skills', 0, 'tags', 1]), 'card.skills[0].tags[1]');
  assert.equal(fieldPath([]), '');
});

test('duplicate skill ids and too many partitions are refused, naming the field', () => {
  const schemas = registrySchemas(8);
  const skill = { id: 's', name: 'S', description: 'd', tags: ['t'] };
  const body = {
    card: {
      name: 'n',
      description: 'd',
      version: '1',
      capabilities: {},
      defaultInputModes: ['a'],
      defaultOutputModes: ['b'],
      skills: [skill, skill],
    },
    channel: { partitions: 9 },
  };
  const err = (() => {
    try {
      parseOrThrow(schemas.register, body, 'registration');
    } catch (e) {
      return e as DirectoryError;
    }
    throw new Error('expected a validation error');
  })();
  assert.equal(err.code, 'VALIDATION_FAILED');
  assert.deepEqual(err.fields.map((f) => f.field).sort(), ['card.skills[1].id', 'channel.partitions']);
});

test('blank strings are refused without trimming what is stored', () => {
  const schemas = registrySchemas(8);
  const card = {
    name: ' Padded ',
    description: ' ',
    version: '1',
    capabilities: {},
    defaultInputModes: ['a'],
    defaultOutputModes: ['b'],
    skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'] }],
  };
  assert.throws(
    () => parseOrThrow(schemas.update, { card }, 'update'),
    (e: DirectoryError) => e.fields[0].field === 'card.description',
  );
  const ok = parseOrThrow(schemas.update, { card: { ...card, description: 'd' } }, 'update');
  assert.equal(ok.card.name, ' Padded ', 'signed bytes stay as they were');
});
