/**
 * pdfTimestamp: an RFC 3161 document timestamp (/Type /DocTimeStamp, /SubFilter /ETSI.RFC3161) appended
 * as an incremental update: the TSA's token over the digest of every byte but the token itself.
 */
import { PDFDocument, type PDFRef } from '@cantoo/pdf-lib';
import { ServiceError } from '../../errors.ts';
import { assertPdf } from '../open.ts';
import { pdfCorrupt } from '../reasons.ts';
import { digest } from './cms.ts';
import type { TrustNet } from './net.ts';
import { addSignatureWidget, commitWithPlaceholder, fillHole, placeholderEntries, PlaceholderTooSmall } from './placeholder.ts';
import { requestTimestamp } from './tsa.ts';
import { workers } from '../../workers/index.ts';

export interface TimestampOptions {
  tsaUrl: string;
  net: TrustNet;
  fieldName?: string;
  signal?: AbortSignal;
}

export interface TimestampResult {
  pdf: Uint8Array;
  field: string;
  time: string;
}

export async function loadForUpdate(bytes: Uint8Array): Promise<PDFDocument> {
  assertPdf(bytes);
  let doc: PDFDocument;
  try {
    doc = await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false, forIncrementalUpdate: true });
    doc.getPages();
  } catch (e) {
    throw pdfCorrupt((e as Error).message);
  }
  if (doc.isEncrypted) {
    throw new ServiceError(
      422,
      'encrypted_document',
      'The PDF is encrypted: unlock it first (pdf-unlock); an incremental update to it would have to be encrypted too.',
    );
  }
  return doc;
}

/** A prepared incremental update: the file with its placeholder, where the hole is, and the digest to sign. */
export interface PreparedUpdate {
  bytes: Uint8Array;
  holeStart: number;
  holeEnd: number;
  field: string;
  digest: Uint8Array;
}

/** The CPU part (parse, append the DocTimeStamp field, save, hash); runs in the worker pool as `pdf.timestamp-prepare`. */
export async function prepareTimestamp(bytes: Uint8Array, o: { fieldName?: string; size: number }): Promise<PreparedUpdate> {
  const doc = await loadForUpdate(bytes);
  const ctx = doc.context;
  const sigRef = ctx.register(
    ctx.obj({ Type: 'DocTimeStamp', Filter: 'Adobe.PPKLite', SubFilter: 'ETSI.RFC3161', ...placeholderEntries(doc, o.size) } as never),
  );
  const ap = ctx.register(ctx.flateStream('', { Type: 'XObject', Subtype: 'Form', BBox: [0, 0, 0, 0], Resources: {} }));
  const field = addSignatureWidget(doc, { sigRef, page: doc.getPage(0), rect: [0, 0, 0, 0], ap, fieldName: o.fieldName });
  return preparedUpdate(doc, bytes, sigRef, field, 'SHA-256');
}

/** The incremental update saved with its placeholder, and the digest of the bytes the signature covers. */
export async function preparedUpdate(
  doc: PDFDocument,
  bytes: Uint8Array,
  sigRef: PDFRef,
  field: string,
  hash: string,
): Promise<PreparedUpdate> {
  const prepared = await commitWithPlaceholder(doc, bytes, sigRef);
  return {
    bytes: prepared.bytes,
    holeStart: prepared.holeStart,
    holeEnd: prepared.holeEnd,
    field,
    digest: await digest(hash, prepared.signedBytes()),
  };
}

/** The PDF work runs in the worker pool; the request to the TSA is made here, on the caller's thread. */
export async function pdfTimestamp(bytes: Uint8Array, o: TimestampOptions): Promise<TimestampResult> {
  let size = 12_288;
  for (let attempt = 0;; attempt++) {
    const prepared = await workers.run('pdf.timestamp-prepare', [bytes, { fieldName: o.fieldName, size }], { signal: o.signal });
    const t = await requestTimestamp(o.net, o.tsaUrl, 'SHA-256', prepared.digest, o.signal);
    try {
      return { pdf: fillHole(prepared, t.token), field: prepared.field, time: t.time.toISOString() };
    } catch (e) {
      if (!(e instanceof PlaceholderTooSmall) || attempt > 0) throw e;
      size = e.needed + 2048;
    }
  }
}
