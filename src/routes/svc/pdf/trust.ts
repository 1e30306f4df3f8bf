/** POST /svc/v1/pdf-sign, /pdf-verify, /pdf-timestamp, /pdf-ltv (docs/api/pdf-trust.md). */
import { readFile } from 'node:fs/promises';
import { Hono } from 'hono';
import * as v from 'valibot';
import type { Config } from '../../../config.ts';
import type { AppEnv } from '../../../http/context.ts';
import { invalidRequest } from '../../../http/validate.ts';
import { invalidArgument } from '../../../services/errors.ts';
import * as trust from '../../../services/pdf/trust/lazy.ts';
import { workers } from '../../../services/workers/index.ts';
import { bytesOption, deliverPdf, type PdfRouteDeps, pdfTask, type PdfTaskInput, readInput, snakeKeys } from './pdf-task.ts';
import { delivery, strings, text } from '../task-options.ts';

export interface PdfTrustDeps extends PdfRouteDeps {
  config: Pick<Config, 'pdfTrustAllowedHosts' | 'pdfTrustAnchors'>;
}

const Sign = v.object({
  certificate: v.optional(v.string()),
  certificate_file_id: v.optional(v.string()),
  certificate_password: v.optional(text),
  key: v.optional(text),
  chain: v.optional(text),
  level: v.optional(v.picklist(['B-B', 'B-T', 'B-LT', 'B-LTA'])),
  reason: v.optional(text),
  location: v.optional(text),
  contact_info: v.optional(text),
  field_name: v.optional(text),
  page: v.optional(v.pipe(v.number(), v.integer())),
  rect: v.optional(v.union([v.pipe(v.array(v.number()), v.length(4)), v.string()])),
  appearance_text: v.optional(text),
  image: v.optional(v.string()),
  image_file_id: v.optional(v.string()),
  certify: v.optional(v.union([v.picklist([1, 2, 3]), v.picklist(['no_changes', 'form_filling', 'annotations'])])),
  tsa_url: v.optional(v.pipe(v.string(), v.url())),
  delivery,
});

const Verify = v.object({
  trusted_certificates: v.optional(strings),
  revocation: v.optional(v.picklist(['embedded', 'online', 'off']), 'embedded'),
});

const Timestamp = v.object({ tsa_url: v.pipe(v.string(), v.url()), field_name: v.optional(text), delivery });
const Ltv = v.object({ chain: v.optional(text), delivery });

const CERTIFY = { no_changes: 1, form_filling: 2, annotations: 3 } as const;

/** PEM text from a text field or from file parts of that name (all of them). */
async function pemOption(input: PdfTaskInput<unknown>, name: string, values: string[] = []): Promise<string> {
  const parts = await Promise.all((input.otherFiles[name] ?? []).map(async (f) => new TextDecoder().decode(await readInput(f))));
  return [...values, ...parts].join('\n');
}

export function pdfTrustRoutes(deps: PdfTrustDeps) {
  const app = new Hono<AppEnv>();
  const net = () => trust.trustNet(deps.config.pdfTrustAllowedHosts);
  let anchors: Promise<string> | undefined;
  const configuredAnchors =
    () => (anchors ??= deps.config.pdfTrustAnchors ? readFile(deps.config.pdfTrustAnchors, 'utf8') : Promise.resolve(''));

  app.post(
    '/pdf-sign',
    pdfTask(deps, {
      name: 'pdf-sign',
      options: Sign,
      async run([doc], o, ctx, input) {
        const p12 = await bytesOption(deps, ctx, input, 'certificate', o.certificate, o.certificate_file_id);
        const keyPem = await pemOption(input, 'key', o.key ? [o.key] : []);
        const chainPem = await pemOption(input, 'chain', o.chain ? [o.chain] : []);
        if (p12 && keyPem) {
          throw invalidRequest('give the signing identity once: "certificate" (PKCS#12) or "key" + "chain" (PEM)', [{
            field: 'certificate',
            message: 'given with key',
          }]);
        }
        if (!p12 && !keyPem) {
          throw invalidRequest(
            'a signing identity is required: "certificate" (PKCS#12 .p12/.pfx) with "certificate_password", or "key" and "chain" (PEM)',
            [{ field: 'certificate', message: 'required' }],
          );
        }
        const identity = p12
          ? await trust.identityFromPkcs12(p12, o.certificate_password ?? '')
          : await trust.identityFromPem(keyPem, chainPem);
        const image = await bytesOption(deps, ctx, input, 'image', o.image, o.image_file_id);
        const rect = typeof o.rect === 'string' ? o.rect.split(/[\s,]+/).filter(Boolean).map(Number) : o.rect;
        if (rect && (rect.length !== 4 || rect.some((n) => !Number.isFinite(n)))) {
          throw invalidArgument('rect: four numbers x, y, width, height (points).', { field: 'rect' });
        }
        const visible = rect !== undefined;
        if (!visible && (image || o.appearance_text)) {
          throw invalidArgument('a visible signature needs its rect: [x, y, width, height] in points.', { field: 'rect' });
        }
        const r = await trust.pdfSign(doc!, {
          identity,
          level: o.level,
          reason: o.reason,
          location: o.location,
          contactInfo: o.contact_info,
          fieldName: o.field_name,
          appearance: visible
            ? { page: o.page ?? 1, rect: rect as [number, number, number, number], text: o.appearance_text, image }
            : undefined,
          certify: typeof o.certify === 'string' ? CERTIFY[o.certify] : o.certify,
          tsaUrl: o.tsa_url,
          net: net(),
          signal: ctx.signal,
        });
        const { pdf, ...info } = r;
        return deliverPdf(ctx, o.delivery, input, 'signed', pdf, snakeKeys(info));
      },
    }),
  );

  app.post(
    '/pdf-verify',
    pdfTask(deps, {
      name: 'pdf-verify',
      options: Verify,
      async run([doc], o, ctx, input) {
        await workers.run('pdf.guard', [doc!], ctx); // bombs refused before the parser sees them
        const pem = [await configuredAnchors(), await pemOption(input, 'trusted_certificates', o.trusted_certificates ?? [])].join('\n');
        const trusted = pem.trim() ? await trust.parseCertificates(pem, 'trusted_certificates') : [];
        return snakeKeys(await trust.pdfVerify(doc!, { trusted, net: net(), revocation: o.revocation, signal: ctx.signal }));
      },
    }),
  );

  app.post(
    '/pdf-timestamp',
    pdfTask(deps, {
      name: 'pdf-timestamp',
      options: Timestamp,
      async run([doc], o, ctx, input) {
        const r = await trust.pdfTimestamp(doc!, { tsaUrl: o.tsa_url, fieldName: o.field_name, net: net(), signal: ctx.signal });
        return deliverPdf(ctx, o.delivery, input, 'timestamped', r.pdf, { field: r.field, time: r.time });
      },
    }),
  );

  app.post(
    '/pdf-ltv',
    pdfTask(deps, {
      name: 'pdf-ltv',
      options: Ltv,
      async run([doc], o, ctx, input) {
        const chain = await pemOption(input, 'chain', o.chain ? [o.chain] : []);
        const extra = chain.trim() ? await trust.parseCertificates(chain, 'chain') : [];
        const r = await trust.pdfLtv(doc!, { net: net(), extraCertificates: extra, signal: ctx.signal });
        return deliverPdf(ctx, o.delivery, input, 'ltv', r.pdf, snakeKeys({ added: r.added, missing: r.missing }));
      },
    }),
  );
  return app;
}
