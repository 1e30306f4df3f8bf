/** The three route families; each has its own error envelope. */
export type Family = 'openai' | 'ollama' | 'svc';

export function familyOf(path: string): Family {
  if (path === '/v1' || path.startsWith('/v1/')) return 'openai';
  if (path === '/api' || path.startsWith('/api/')) return 'ollama';
  return 'svc';
}
