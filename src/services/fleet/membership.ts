/**
 * Fleet membership (docs/fleet.md): this node writes a heartbeat into the shared database every period;
 * live nodes are those seen within the node timeout. A node that stops heartbeating is dead: the first
 * survivor to notice fails its processing jobs with job_lost and removes its row (a node that comes back
 * simply heartbeats again). The live count divides the per-key in-flight ceiling.
 */
import type { Logger } from '../../log.ts';
import { heartbeat, leaveFleet, liveNodeTags, silentNodeTags } from '../../store/fleet-nodes.ts';
import { failLostJobs } from '../../store/jobs.ts';
import type { Db } from '../../store/schema.ts';

export interface MembershipOptions {
  db: Db;
  nodeTag: string;
  heartbeatSeconds: number;
  nodeTimeoutSeconds: number;
  log: Logger;
}

export class FleetMembership {
  readonly #startedAt = Date.now();
  #live: string[] = [];
  #beating: Promise<void> | undefined;

  constructor(private o: MembershipOptions) {}

  /** Live nodes as of the last heartbeat (this node always counts itself). */
  liveCount(): number {
    return Math.max(1, this.#live.length + (this.#live.includes(this.o.nodeTag) ? 0 : 1));
  }

  isLive(tag: string): boolean {
    return tag === this.o.nodeTag || this.#live.includes(tag);
  }

  liveNodes(): string[] {
    return [...this.#live];
  }

  /** Called by the node's periodic upkeep; a heartbeat still running is not doubled. */
  tick(): void {
    if (this.#beating) return;
    this.#beating = this.beat().catch((e) => this.o.log.error('fleet heartbeat', e)).finally(() => {
      this.#beating = undefined;
    });
  }

  /** One heartbeat: write ours, take over the dead, refresh the live list. */
  async beat(now = Date.now()): Promise<void> {
    const { db, nodeTag } = this.o;
    await heartbeat(db, nodeTag, now, this.#startedAt);
    const deadline = now - this.o.nodeTimeoutSeconds * 1000;
    for (const tag of await silentNodeTags(db, deadline)) {
      const n = await failLostJobs(db, tag, now, `the job was lost when its node ${tag} stopped answering; submit it again`);
      await leaveFleet(db, tag);
      this.o.log.warn(`fleet node ${tag} not seen for ${this.o.nodeTimeoutSeconds}s: ${n} of its job(s) failed with job_lost`);
    }
    this.#live = await liveNodeTags(db, deadline);
  }

  /** A clean stop leaves the fleet at once, so the others divide the ceiling by one node fewer. */
  async stop(): Promise<void> {
    await this.#beating;
    await leaveFleet(this.o.db, this.o.nodeTag).catch(() => {});
  }
}
