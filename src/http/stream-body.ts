/**
 * The body of a streamed answer (NDJSON, SSE): the first item is awaited before the response is committed,
 * so a failure before anything was produced still answers with its HTTP status; later items are pulled on
 * demand; a failure after the stream began can only be told in-band, as a last frame; a client that
 * disconnects cancels the stream, which calls `return()` on the iterator (the producer decides whether its
 * work goes on).
 */
export interface Framing {
  item(value: unknown): Uint8Array;
  error(err: unknown): Uint8Array;
  /** Written after the last item (SSE's `data: [DONE]`). */
  end?: Uint8Array;
  /** Told once how the stream ended: sent to the end (an in-band error included), or cancelled by the client. */
  onEnd?(how: 'done' | 'cancelled'): void;
}

/** A failure caused by the client going away, not by the work: never framed, never logged as an error. */
const isAbort = (e: unknown) => e instanceof Error && (e.name === 'AbortError' || e.name === 'TimeoutError');

/** Throws (before any byte is sent) when the first item fails. */
export async function streamBody(items: AsyncIterable<unknown>, framing: Framing): Promise<ReadableStream<Uint8Array>> {
  const it = items[Symbol.asyncIterator]();
  const first = await it.next(); // a failure here propagates: the caller answers with a status
  let finished = false;
  let cancelled = false;
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, last?: Uint8Array) => {
    finished = true;
    if (last) controller.enqueue(last);
    controller.close();
    framing.onEnd?.('done');
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.done) finish(controller, framing.end);
      else controller.enqueue(framing.item(first.value));
    },
    async pull(controller) {
      if (finished) return;
      try {
        const r = await it.next();
        if (r.done) finish(controller, framing.end);
        else controller.enqueue(framing.item(r.value));
      } catch (err) {
        if (cancelled || (isAbort(err) && finished)) return;
        finish(controller, framing.error(err));
      }
    },
    async cancel() {
      cancelled = finished = true;
      framing.onEnd?.('cancelled');
      await it.return?.().catch((e: unknown) => {
        if (!isAbort(e)) throw e;
      });
    },
  });
}
