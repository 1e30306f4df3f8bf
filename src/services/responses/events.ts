/**
 * Builds a response's output items and its stream events from chat deltas, in the order the Responses
 * stream defines: response.created, response.in_progress, then per item output_item.added, its content
 * events (content_part.added, output_text.delta…, output_text.done, content_part.done; or reasoning text;
 * or function_call_arguments.delta/done), output_item.done; and last response.completed (or
 * response.incomplete / response.failed). Every event carries the next sequence_number.
 */
import { itemId } from './request.ts';

export type Event = Record<string, unknown> & { type: string; sequence_number: number };
type OutItem = Record<string, unknown> & { id: string; type: string };

export interface Citation {
  file_id: string;
  filename: string;
}

export class OutputBuilder {
  readonly output: OutItem[] = [];
  #seq = 0;
  #open: { kind: 'message' | 'reasoning'; item: OutItem; text: string } | null = null;
  reasoningDeltas = 0;

  constructor(private snapshot: () => Record<string, unknown>) {}

  ev(type: string, fields: Record<string, unknown> = {}): Event {
    return { type, sequence_number: this.#seq++, ...fields };
  }

  start(): Event[] {
    return [this.ev('response.created', { response: this.snapshot() }), this.ev('response.in_progress', { response: this.snapshot() })];
  }

  /** A finished item (a file_search_call) with its own progress events in between. */
  whole(item: OutItem, progress: string[] = []): Event[] {
    const out_index = this.output.length;
    this.output.push(item);
    const added = { ...item, status: 'in_progress' };
    return [
      this.ev('response.output_item.added', { output_index: out_index, item: added }),
      ...progress.map((p) => this.ev(p, { output_index: out_index, item_id: item.id })),
      this.ev('response.output_item.done', { output_index: out_index, item }),
    ];
  }

  text(delta: string): Event[] {
    return this.#append('message', delta);
  }

  reasoning(delta: string): Event[] {
    this.reasoningDeltas++;
    return this.#append('reasoning', delta);
  }

  #append(kind: 'message' | 'reasoning', delta: string): Event[] {
    const out: Event[] = [];
    if (this.#open && this.#open.kind !== kind) out.push(...this.close());
    if (!this.#open) out.push(...this.#openItem(kind));
    const o = this.#open!;
    o.text += delta;
    const at = { item_id: o.item.id, output_index: this.output.length - 1, content_index: 0 };
    out.push(
      kind === 'message'
        ? this.ev('response.output_text.delta', { ...at, delta, logprobs: [] })
        : this.ev('response.reasoning.delta', { ...at, delta }),
    );
    return out;
  }

  #openItem(kind: 'message' | 'reasoning'): Event[] {
    const item: OutItem = kind === 'message'
      ? { id: itemId('msg'), type: 'message', status: 'in_progress', role: 'assistant', content: [] }
      : { id: itemId('rs'), type: 'reasoning', summary: [], content: [] };
    this.output.push(item);
    this.#open = { kind, item, text: '' };
    const at = { item_id: item.id, output_index: this.output.length - 1, content_index: 0 };
    const part = kind === 'message'
      ? { type: 'output_text', text: '', annotations: [], logprobs: [] }
      : { type: 'reasoning_text', text: '' };
    return [
      this.ev('response.output_item.added', { output_index: at.output_index, item: structuredClone(item) }),
      this.ev('response.content_part.added', { ...at, part }),
    ];
  }

  /** Closes the open message or reasoning item; a message gets its citations as annotations. */
  close(citations: Citation[] = []): Event[] {
    const o = this.#open;
    if (!o) return [];
    this.#open = null;
    const at = { item_id: o.item.id, output_index: this.output.indexOf(o.item), content_index: 0 };
    const out: Event[] = [];
    if (o.kind === 'message') {
      const annotations = citations.map((c) => ({ type: 'file_citation', file_id: c.file_id, filename: c.filename, index: o.text.length }));
      annotations.forEach((a, i) =>
        out.push(this.ev('response.output_text.annotation.added', { ...at, annotation_index: i, annotation: a }))
      );
      const part = { type: 'output_text', text: o.text, annotations, logprobs: [] };
      out.push(this.ev('response.output_text.done', { ...at, text: o.text, logprobs: [] }));
      out.push(this.ev('response.content_part.done', { ...at, part }));
      Object.assign(o.item, { status: 'completed', content: [part] });
    } else {
      const part = { type: 'reasoning_text', text: o.text };
      out.push(this.ev('response.reasoning.done', { ...at, text: o.text }));
      out.push(this.ev('response.content_part.done', { ...at, part }));
      Object.assign(o.item, { content: [part] });
    }
    out.push(this.ev('response.output_item.done', { output_index: at.output_index, item: o.item }));
    return out;
  }

  /** A complete function call item with its argument events. */
  functionCall(name: string, args: string, callId: string): Event[] {
    return [...this.callStart(name, callId), ...this.callDelta(args), ...this.callDone()];
  }

  #call: { item: OutItem; output_index: number; args: string } | null = null;

  /** A function call item opened, its arguments to follow in fragments (callDelta) until callDone. */
  callStart(name: string, callId: string): Event[] {
    const out = this.close();
    const item: OutItem = { id: itemId('fc'), type: 'function_call', status: 'in_progress', call_id: callId, name, arguments: '' };
    this.output.push(item);
    this.#call = { item, output_index: this.output.length - 1, args: '' };
    out.push(this.ev('response.output_item.added', { output_index: this.#call.output_index, item: structuredClone(item) }));
    return out;
  }

  callDelta(delta: string): Event[] {
    const c = this.#call;
    if (!c || !delta) return [];
    c.args += delta;
    return [this.ev('response.function_call_arguments.delta', { item_id: c.item.id, output_index: c.output_index, delta })];
  }

  callDone(): Event[] {
    const c = this.#call;
    if (!c) return [];
    this.#call = null;
    const { item, output_index, args } = c;
    const out = [this.ev('response.function_call_arguments.done', { item_id: item.id, output_index, name: item.name, arguments: args })];
    Object.assign(item, { status: 'completed', arguments: args });
    out.push(this.ev('response.output_item.done', { output_index, item }));
    return out;
  }

  hasMessage(): boolean {
    return this.output.some((i) => i.type === 'message');
  }
}
