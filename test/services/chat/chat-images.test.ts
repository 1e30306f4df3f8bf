import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../../../src/services/errors.ts';
import { imageBytes } from '../../../src/services/chat/chat-images.ts';

describe('chat image references', () => {
  it('image URLs are refused by default (empty egress policy): 403 egress_denied naming the setting', async () => {
    await assert.rejects(
      imageBytes('https://example.com/cat.png', { allowedHosts: [] }),
      (e: unknown) =>
        e instanceof ServiceError && e.status === 403 && e.reason === 'egress_denied' && /chat-image-allowed-hosts/.test(e.message),
    );
  });

  it('base64 and data URLs decode to the same bytes; a data URL that is not base64 is 400', async () => {
    const a = await imageBytes('aGVsbG8=', { allowedHosts: [] });
    const b = await imageBytes('data:image/png;base64,aGVs\nbG8=', { allowedHosts: [] });
    assert.deepEqual(a, new TextEncoder().encode('hello'));
    assert.deepEqual(b, a);
    await assert.rejects(
      imageBytes('data:image/png,hello', { allowedHosts: [] }),
      (e: unknown) => e instanceof ServiceError && e.status === 400,
    );
  });
});
