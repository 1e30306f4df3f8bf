/** Per-request values every handler can read. */
import type { TicketSession } from '../services/admin/area-tickets.ts';
import type { Owner } from '../services/keys/api-keys.ts';

export type StreamEnd = 'done' | 'cancelled';

export type AppEnv = {
  Variables: {
    requestId: string;
    owner: Owner;
    maxUploadBytes: number;
    /** Set when the caller went away before a synchronous task finished (logged as 499). */
    clientClosed?: boolean;
    /** Set when the request was authenticated by an admin console area ticket. */
    areaTicket?: TicketSession;
    /** For a streamed answer: settles when the stream ends, `cancelled` when the client went away (logged as 499). */
    streamEnded?: Promise<StreamEnd>;
  };
};
