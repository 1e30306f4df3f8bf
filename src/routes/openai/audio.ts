/** OpenAI dialect: POST /v1/audio/transcriptions and /v1/audio/translations (multipart, Whisper). */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { openaiTranscription, type TranscriptionRouteDeps } from '../svc/media/transcription-task.ts';

export function openaiAudioRoutes(deps: TranscriptionRouteDeps) {
  const app = new Hono<AppEnv>();
  app.post('/audio/transcriptions', openaiTranscription(deps, 'transcribe'));
  app.post('/audio/translations', openaiTranscription(deps, 'translate'));
  return app;
}
