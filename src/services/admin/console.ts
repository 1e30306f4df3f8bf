/** What the admin console needs beyond keys, jobs and settings: sign-in, second factor, errors, dashboard. */
import type { Config } from '../../config.ts';
import type { Logger } from '../../log.ts';
import { runtimeVersion } from '../../runtime/env.ts';
import { countJobsByStatus } from '../../store/job-stats.ts';
import type { Db } from '../../store/schema.ts';
import { VERSION } from '../../version.ts';
import type { InferenceEngine } from '../inference/engine.ts';
import type { TaskRunner } from '../jobs/task-runner.ts';
import type { KeyService } from '../keys/api-keys.ts';
import { AreaTickets } from './area-tickets.ts';
import { RecentErrors } from './recent-errors.ts';
import { SignInLimiter } from './sign-in-limiter.ts';
import { TwoFactor } from './two-factor.ts';

const startedAt = Date.now();

export class AdminConsole {
  readonly twoFactor: TwoFactor;
  readonly tickets: AreaTickets;
  readonly errors = new RecentErrors();

  constructor(
    private o: { db: Db; keys: KeyService; log: Logger; config: Config; runner: TaskRunner; engine: InferenceEngine; nodeTag: string },
  ) {
    this.twoFactor = new TwoFactor(o.db);
    this.tickets = new AreaTickets(o.db, o.keys, this.twoFactor, new SignInLimiter());
    this.errors.attach(o.log);
  }

  async dashboard() {
    const active = this.o.runner.active();
    return {
      version: VERSION,
      runtime: runtimeVersion(),
      node: this.o.nodeTag,
      uptime_seconds: Math.round((Date.now() - startedAt) / 1000),
      loaded_models: this.o.engine.list().map((r) => ({
        name: r.name,
        size: r.sizeBytes,
        device: r.device,
        runtime: r.ort,
        dtype: r.dtype,
        active: r.active,
        queued: r.queued,
        expires_at: r.expiresAt?.toISOString() ?? null,
      })),
      jobs: {
        active: active.length,
        active_jobs: active.filter((j) => j.mode === 'job').length,
        by_status: await countJobsByStatus(this.o.db),
      },
      keys: { active: await this.o.keys.activeCount(true) },
    };
  }

  /** Server settings fixed at start (shown read-only in the console's General page); no secrets. */
  startupSettings() {
    const c = this.o.config;
    return {
      host: c.host,
      port: c.port,
      require_keys: c.requireKeys,
      max_upload_bytes: c.maxUploadBytes,
      max_jobs_per_owner: c.maxJobsPerOwner,
      job_retention_seconds: c.jobRetentionSeconds,
      file_retention_seconds: c.fileRetentionSeconds,
      backend: c.backend,
      threads: c.threads,
      max_loaded_models: c.maxLoadedModels,
      memory_budget_bytes: c.memoryBudgetBytes,
      slots_per_model: c.slotsPerModel,
      saturation_policy: c.saturationPolicy,
      keep_alive_seconds: c.keepAliveSeconds,
      idle_device_memory_release_seconds: c.idleDeviceMemoryReleaseSeconds,
      hub_url: c.hubUrl,
      hub_allowed_hosts: c.hubAllowedHosts,
    };
  }
}
