/** The route families; each has its own error envelope. */
export type Family = 'openai' | 'ollama' | 'svc' | 'anthropic';

/**
 * The Anthropic Messages gateway shares the `/v1` prefix with dialect A: its own routes
 * (`/v1/messages…`) are always Anthropic; any other `/v1` route answers in Anthropic's shapes when the
 * caller speaks that API, which its clients announce with the `anthropic-version` header.
 */
export function familyOf(path: string, anthropicVersion?: string | null): Family {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path === '/v1' || path.startsWith('/v1/')) return anthropicVersion ? 'anthropic' : 'openai';
  if (path === '/api' || path.startsWith('/api/')) return 'ollama';
  return 'svc';
}
