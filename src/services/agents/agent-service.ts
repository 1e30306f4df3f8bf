/**
 * Agents (named chat configurations) and skills (named, versioned prompt programs with typed inputs and an
 * optional output schema), private to the key that made them, and their application to a chat-completion
 * body: `agent`, `skill` and `skill_inputs` become the model, messages, sampling, tools and
 * response_format the chat service already understands. Rules in docs/api/agents.md.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { ServiceError } from '../errors.ts';
import {
  addSkillVersion,
  deleteAgent,
  deleteSkill,
  getAgent,
  getSkill,
  listAgents,
  listSkills,
  putAgent,
  skillVersions,
} from '../../store/agents.ts';
import type { Db, SkillTable } from '../../store/schema.ts';

export interface AgentConfig {
  model?: string;
  instructions?: string;
  description?: string;
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  seed?: number;
  tools?: unknown[];
  tool_choice?: unknown;
  /** A skill the agent runs when the request names none. */
  skill?: string;
  /** Tools the server runs itself inside a turn: names, or `{name, …bound arguments}` (docs/api/agents.md). */
  server_tools?: (string | { name: string; [arg: string]: unknown })[];
  /** Most tool rounds of one turn. */
  step_limit?: number;
  /** The memory store its turns recall from and write to (off with memory: false). */
  memory_store?: string;
  memory?: boolean | { recall?: boolean; write?: boolean; extract?: 'rules' | 'model' };
}

export interface SkillInput {
  name: string;
  description?: string;
  /** The prompt template: `{{field}}` is replaced by the input's value (non-strings as JSON). */
  prompt: string;
  input_schema?: Record<string, unknown>;
  output_schema?: Record<string, unknown>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });
const iso = (ms: number) => new Date(Number(ms)).toISOString();

export function checkName(name: unknown, field = 'name'): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw bad(field, 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit');
  }
  return name;
}

const skillView = (r: SkillTable) => ({
  object: 'skill',
  name: r.name,
  version: Number(r.version),
  description: r.description,
  prompt: r.prompt,
  input_schema: JSON.parse(r.input_schema),
  output_schema: r.output_schema ? JSON.parse(r.output_schema) : null,
  created_at: iso(r.created_at),
});

type Body = Record<string, unknown>;

export class AgentService {
  private readonly ajv = new Ajv({ allErrors: false, strict: false });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly db: Db) {}

  // ---- agents
  async putAgent(owner: string, name: string, config: AgentConfig) {
    checkName(name);
    if (config.skill) checkName(config.skill, 'skill');
    const now = Date.now();
    const existing = await getAgent(this.db, owner, name);
    await putAgent(this.db, { owner, name, config: JSON.stringify(config), created_at: existing?.created_at ?? now, updated_at: now });
    return { agent: await this.getAgent(owner, name), created: !existing };
  }
  async getAgent(owner: string, name: string) {
    const r = await getAgent(this.db, owner, name);
    if (!r) throw new ServiceError(404, 'not_found', `agent "${name}" not found`);
    return {
      object: 'agent',
      name: r.name,
      ...(JSON.parse(r.config) as AgentConfig),
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    };
  }
  async listAgents(owner: string) {
    return (await listAgents(this.db, owner)).map((r) => ({
      object: 'agent',
      name: r.name,
      ...(JSON.parse(r.config) as AgentConfig),
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    }));
  }
  async deleteAgent(owner: string, name: string) {
    if (!(await deleteAgent(this.db, owner, name))) throw new ServiceError(404, 'not_found', `agent "${name}" not found`);
    return { object: 'agent.deleted', name, deleted: true };
  }

  // ---- skills
  async addSkill(owner: string, s: SkillInput) {
    checkName(s.name);
    const inputSchema = s.input_schema ?? { type: 'object' };
    try {
      this.ajv.compile(inputSchema);
    } catch (e) {
      throw bad('input_schema', `not a valid JSON schema: ${(e as Error).message}`);
    }
    for (const ref of s.prompt.matchAll(/\{\{\s*([\w.-]+)\s*\}\}/g)) {
      const props = (inputSchema as { properties?: Record<string, unknown> }).properties ?? {};
      if (!(ref[1]! in props)) throw bad('prompt', `uses {{${ref[1]}}}, which input_schema.properties does not declare`);
    }
    const row = await addSkillVersion(this.db, {
      owner,
      name: s.name,
      description: s.description ?? null,
      prompt: s.prompt,
      input_schema: JSON.stringify(inputSchema),
      output_schema: s.output_schema ? JSON.stringify(s.output_schema) : null,
      created_at: Date.now(),
    });
    return skillView(row);
  }
  async getSkill(owner: string, name: string, version?: number) {
    const r = await getSkill(this.db, owner, name, version);
    if (!r) throw new ServiceError(404, 'not_found', `skill "${name}"${version ? ` version ${version}` : ''} not found`);
    return skillView(r);
  }
  async skillVersions(owner: string, name: string) {
    const rows = await skillVersions(this.db, owner, name);
    if (!rows.length) throw new ServiceError(404, 'not_found', `skill "${name}" not found`);
    return rows.map(skillView);
  }
  listSkills = async (owner: string) => (await listSkills(this.db, owner)).map(skillView);
  async deleteSkill(owner: string, name: string) {
    if (!(await deleteSkill(this.db, owner, name))) throw new ServiceError(404, 'not_found', `skill "${name}" not found`);
    return { object: 'skill.deleted', name, deleted: true };
  }

  /** The skill's prompt rendered from inputs validated against its input schema (400 naming the field). */
  async renderSkill(owner: string, ref: string, inputs: unknown) {
    const [name, v] = ref.split('@') as [string, string | undefined];
    const r = await getSkill(this.db, owner, name, v === undefined ? undefined : Number(v));
    if (!r) throw bad('skill', `unknown skill "${ref}"`);
    const key = `${r.owner}\u0000${r.name}\u0000${r.version}`;
    let validate = this.compiled.get(key);
    if (!validate) this.compiled.set(key, validate = this.ajv.compile(JSON.parse(r.input_schema)));
    const given = inputs ?? {};
    if (!validate(given)) {
      const e = validate.errors![0]!;
      const missing = (e.params as { missingProperty?: string }).missingProperty;
      const extra = (e.params as { additionalProperty?: string }).additionalProperty;
      const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
      const field = `skill_inputs${missing ? `.${missing}` : extra ? `.${extra}` : path ? `.${path}` : ''}`;
      throw bad(field, extra ? 'is not an input of this skill' : e.message ?? 'invalid');
    }
    const values = given as Record<string, unknown>;
    const text = r.prompt.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (_m, k: string) => {
      const x = values[k];
      return x === undefined ? '' : typeof x === 'string' ? x : JSON.stringify(x);
    });
    return {
      text,
      outputSchema: r.output_schema ? (JSON.parse(r.output_schema) as Record<string, unknown>) : undefined,
      description: r.description,
      skill: skillView(r),
    };
  }

  /**
   * A /v1/responses body with `agent` applied and removed: the agent fills what the request leaves out
   * (model, sampling, max_output_tokens, function tools, tool_choice) and its instructions come before the
   * request's. Server tools, skills and memory run in chat completions only: an agent using them is refused.
   */
  async applyToResponses(owner: string, body: Body): Promise<Body> {
    const { agent: agentName, ...rest } = body;
    if (agentName === undefined || agentName === null) return rest;
    if (typeof agentName !== 'string' || !agentName) throw bad('agent', 'must be a non-empty string');
    const row = await getAgent(this.db, owner, agentName);
    if (!row) throw bad('agent', `unknown agent "${agentName}"`);
    const a = JSON.parse(row.config) as AgentConfig;
    const uses = [
      a.server_tools?.length ? 'server_tools' : '',
      a.skill ? 'skill' : '',
      a.memory_store && a.memory !== false ? 'memory_store' : '',
    ].filter(Boolean);
    if (uses.length) throw bad('agent', `agent "${agentName}" uses ${uses.join(', ')}, which run in /v1/chat/completions only`);
    const out: Body = { ...rest };
    if (out.model === undefined && a.model) out.model = a.model;
    for (const k of ['temperature', 'top_p', 'tool_choice'] as const) if (out[k] === undefined && a[k] !== undefined) out[k] = a[k];
    if (out.max_output_tokens === undefined && a.max_tokens !== undefined) out.max_output_tokens = a.max_tokens;
    if (a.tools?.length) {
      const own = (a.tools as { function: { name: string; description?: string; parameters?: unknown } }[]).map((t) => ({
        type: 'function',
        name: t.function.name,
        description: t.function.description,
        parameters: t.function.parameters,
      }));
      out.tools = [...(Array.isArray(out.tools) ? out.tools : []), ...own];
    }
    if (a.instructions) {
      out.instructions = typeof out.instructions === 'string' && out.instructions
        ? `${a.instructions}\n\n${out.instructions}`
        : a.instructions;
    }
    return out;
  }

  /**
   * A chat-completion body with `agent`, `skill` and `skill_inputs` applied and removed: the agent fills
   * what the request leaves out (model, sampling, tools) and puts its instructions first; a skill's
   * rendered prompt is the last user message and its output schema the response_format.
   */
  async applyToChat(owner: string, body: Body): Promise<Body> {
    const { agent: agentName, skill, skill_inputs, ...rest } = body;
    const out: Body = { ...rest };
    let skillRef = skill;
    if (agentName !== undefined && agentName !== null) {
      if (typeof agentName !== 'string' || !agentName) throw bad('agent', 'must be a non-empty string');
      const row = await getAgent(this.db, owner, agentName);
      if (!row) throw bad('agent', `unknown agent "${agentName}"`);
      const a = JSON.parse(row.config) as AgentConfig;
      if (out.model === undefined && a.model) out.model = a.model;
      for (const k of ['temperature', 'top_p', 'max_tokens', 'seed', 'tools', 'tool_choice'] as const) {
        if (out[k] === undefined && a[k] !== undefined) out[k] = a[k];
      }
      if (a.instructions) {
        out.messages = [{ role: 'system', content: a.instructions }, ...(Array.isArray(out.messages) ? out.messages : [])];
      }
      if ((skillRef === undefined || skillRef === null) && a.skill) skillRef = a.skill;
      if (a.server_tools?.length && out.server_tools === undefined) out.server_tools = a.server_tools;
      for (const k of ['step_limit', 'memory_store', 'memory'] as const) {
        if (out[k] === undefined && a[k] !== undefined) out[k] = a[k];
      }
    }
    if (skillRef !== undefined && skillRef !== null) {
      if (typeof skillRef !== 'string' || !skillRef) throw bad('skill', 'must be a non-empty string');
      if (skill_inputs !== undefined && skill_inputs !== null && (typeof skill_inputs !== 'object' || Array.isArray(skill_inputs))) {
        throw bad('skill_inputs', 'must be an object');
      }
      const r = await this.renderSkill(owner, skillRef, skill_inputs);
      out.messages = [...(Array.isArray(out.messages) ? out.messages : []), { role: 'user', content: r.text }];
      if (r.outputSchema) {
        if (out.response_format !== undefined && out.response_format !== null) {
          throw bad('response_format', `the skill "${skillRef}" fixes the output schema; leave response_format out`);
        }
        out.response_format = { type: 'json_schema', json_schema: { name: r.skill.name, schema: r.outputSchema, strict: true } };
      }
    } else if (skill_inputs !== undefined && skill_inputs !== null) {
      throw bad('skill_inputs', 'given without a skill');
    }
    return out;
  }
}
