/** The memory write-back policy (docs/api/agents.md): which sentences of a user message are facts. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { factsStated } from '../../../src/services/agents/memory-service.ts';

it('first-person statements are facts; questions, requests to the assistant and other subjects are not', () => {
  assert.deepEqual(factsStated('My name is Ada. I live in Lisbon! Can you help me? I want you to be brief. The sky is blue.'), [
    'My name is Ada.',
    'I live in Lisbon!',
  ]);
  assert.deepEqual(factsStated("I'm allergic to peanuts\nI've two cats\nwhat is my name?"), ["I'm allergic to peanuts.", "I've two cats."]);
  assert.deepEqual(factsStated('Is it raining? Ideas welcome. Mine.'), [], 'too short, or not about the user');
  assert.deepEqual(factsStated(`I like ${'x'.repeat(400)}.`), [], 'over 300 characters');
  assert.deepEqual(factsStated('Iceland is cold. Mycology is fun.'), [], 'a word that merely starts with I or My');
});
