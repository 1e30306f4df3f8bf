/**
 * The PDF failure reasons this service answers with, in one place so every operation gives the same
 * answer for the same cause. Statuses: a fault of the request is 400, a document
 * whose content cannot be processed is 422, bytes that are not a PDF at all are 415.
 */
import { ServiceError } from '../errors.ts';

export const passwordRequired = () =>
  new ServiceError(400, 'password_required', 'The PDF is encrypted: pass its password (user or owner) in `password`.');

export const passwordIncorrect = () =>
  new ServiceError(400, 'password_incorrect', 'The password given does not open this PDF (neither its user nor its owner password).');

export const pdfCorrupt = (detail: string) =>
  new ServiceError(422, 'pdf_corrupt', `The file starts like a PDF but cannot be read: ${detail}`);

export const notAPdf = () => new ServiceError(415, 'unsupported_file_type', 'The bytes are not a PDF (no %PDF- header).');
